package metrics

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"gopkg.in/yaml.v3"
)

// The Grafana dashboard and the Prometheus rules under deploy/ query only metric families this package
// registers, with only the labels those families carry. The families come from the registry's descriptors,
// not from a scrape: a labelled series is in /metrics only after its first event, and a query of a family
// that was renamed or never existed would otherwise show an empty panel or an alert that can never fire.

const deployDir = "../../deploy"

// targetLabels are added by Prometheus or Kubernetes service discovery, not by ejserver; exported_job is
// ejserver's job label (--metrics-per-job) as Prometheus renames it beside the scrape's own job label.
var targetLabels = []string{"instance", "job", "pod", "namespace", "exported_job"}

// registeredFamilies returns every family name the server's registry describes, with its labels (const and
// variable), in both label modes and with every source set.
func registeredFamilies(t *testing.T) map[string][]string {
	t.Helper()
	i := func() int { return 0 }
	i64 := func() int64 { return 0 }
	b := func() bool { return true }
	all := Sources{InFlight: i, Waiting: i, HistoryStats: func() (int64, int64, int64, int64) { return 0, 0, 0, 0 },
		HistoryDegraded: b, HistoryRollupBehind: func() float64 { return 0 }, SessionHealthy: b, SessionLease: b, Reconnects: i64, Expirations: i64,
		Leaderships: i, ScheduledJobs: i, GCBetweenBursts: i64,
		RegistryBacklog: func() (int, int, int) { return 0, 0, 0 },
		ZooKeeperWrites: func() ZooKeeperWrites { return ZooKeeperWrites{} }}
	descRE := regexp.MustCompile(`^Desc\{fqName: "([^"]+)", .*constLabels: \{([^}]*)\}, variableLabels: \{([^}]*)\}\}$`)
	fams := map[string][]string{}
	for _, perJob := range []bool{false, true} {
		m := New(Config{PerJobLabels: perJob, Sources: all, Build: Build{Version: "v", Commit: "c", GoVersion: "go"}})
		ch := make(chan *prometheus.Desc)
		go func() { m.reg.Describe(ch); close(ch) }()
		for d := range ch {
			sm := descRE.FindStringSubmatch(d.String())
			if sm == nil {
				t.Fatalf("cannot read the descriptor %s", d)
			}
			labels := fams[sm[1]]
			for _, pair := range strings.Split(sm[2], ",") {
				if name, _, ok := strings.Cut(pair, "="); ok {
					labels = append(labels, name)
				}
			}
			for _, name := range strings.Split(sm[3], ",") {
				if name = strings.TrimSuffix(strings.TrimPrefix(name, "c("), ")"); name != "" {
					labels = append(labels, name)
				}
			}
			fams[sm[1]] = labels
		}
	}
	for name, labels := range fams {
		slices.Sort(labels)
		fams[name] = slices.Compact(labels)
	}
	if _, ok := fams["go_goroutines"]; len(fams) < 30 || !ok || fams["ejserver_fires_total"] == nil {
		t.Fatalf("the registry describes too little: %v", fams)
	}
	return fams
}

// selector is a metric named in a query, with the label names its matchers use.
type selector struct {
	metric string
	labels []string
}

// query is what an expression names: its selectors, and the labels of its by/without/on/ignoring lists.
type query struct {
	selectors []selector
	grouping  []string
}

// promAggregations may be followed by by/without before their parenthesis.
var promAggregations = map[string]bool{"sum": true, "min": true, "max": true, "avg": true, "group": true, "stddev": true,
	"stdvar": true, "count": true, "count_values": true, "bottomk": true, "topk": true, "quantile": true,
	"limitk": true, "limit_ratio": true}

var promKeywords = map[string]bool{"by": true, "without": true, "on": true, "ignoring": true, "group_left": true,
	"group_right": true, "bool": true, "and": true, "or": true, "unless": true, "offset": true, "inf": true, "nan": true}

// parseQuery reads a PromQL expression far enough to tell metric names from functions, keywords and labels.
// It skips strings, range and subquery brackets, and Grafana's $variables.
func parseQuery(expr string) (query, error) {
	var q query
	isIdent := func(c byte, first bool) bool {
		return c == '_' || c == ':' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || !first && c >= '0' && c <= '9'
	}
	skipSpace := func(i int) int {
		for i < len(expr) && (expr[i] == ' ' || expr[i] == '\n' || expr[i] == '\t') {
			i++
		}
		return i
	}
	// labelList reads "(a, b)" at i and returns the names and the index after it
	labelList := func(i int) ([]string, int) {
		i = skipSpace(i)
		if i >= len(expr) || expr[i] != '(' {
			return nil, i
		}
		end := strings.IndexByte(expr[i:], ')')
		if end < 0 {
			return nil, len(expr)
		}
		var names []string
		for _, n := range strings.Split(expr[i+1:i+end], ",") {
			if n = strings.TrimSpace(n); n != "" {
				names = append(names, n)
			}
		}
		return names, i + end + 1
	}
	// matchers reads "{a="x", b=~"y"}" at i and returns the label names and the index after it
	matchers := func(i int) ([]string, int) {
		var names []string
		i++ // '{'
		for i < len(expr) && expr[i] != '}' {
			i = skipSpace(i)
			j := i
			for j < len(expr) && isIdent(expr[j], j == i) {
				j++
			}
			if j > i {
				names = append(names, expr[i:j])
			}
			i = j
			for i < len(expr) && expr[i] != '"' && expr[i] != '}' { // the operator
				i++
			}
			if i < len(expr) && expr[i] == '"' {
				i++
				for i < len(expr) && expr[i] != '"' {
					if expr[i] == '\\' {
						i++
					}
					i++
				}
				i++
			}
			i = skipSpace(i)
			if i < len(expr) && expr[i] == ',' {
				i++
			}
		}
		return names, i + 1
	}
	for i := 0; i < len(expr); {
		c := expr[i]
		switch {
		case c == '"' || c == '\'' || c == '`':
			end := strings.IndexByte(expr[i+1:], c)
			if end < 0 {
				return q, fmt.Errorf("unterminated string in %q", expr)
			}
			i += end + 2
		case c == '[':
			end := strings.IndexByte(expr[i:], ']')
			if end < 0 {
				return q, fmt.Errorf("unterminated [ in %q", expr)
			}
			i += end + 1
		case c == '$':
			i++
			if i < len(expr) && expr[i] == '{' {
				i += strings.IndexByte(expr[i:], '}') + 1
			}
			for i < len(expr) && isIdent(expr[i], false) {
				i++
			}
		case c == '{': // matchers without a metric name
			names, next := matchers(i)
			q.selectors = append(q.selectors, selector{labels: names})
			i = next
		case c >= '0' && c <= '9' || c == '.':
			for i < len(expr) && (isIdent(expr[i], false) || expr[i] == '.') {
				i++
			}
		case isIdent(c, true):
			j := i
			for j < len(expr) && isIdent(expr[j], false) {
				j++
			}
			word := expr[i:j]
			k := skipSpace(j)
			switch {
			case promKeywords[strings.ToLower(word)]:
				if w := strings.ToLower(word); w == "by" || w == "without" || w == "on" || w == "ignoring" || w == "group_left" || w == "group_right" {
					names, next := labelList(j)
					q.grouping = append(q.grouping, names...)
					j = next
				}
			case k < len(expr) && expr[k] == '(': // a function or an aggregation (its by/without may follow)
			case promAggregations[word] && (strings.HasPrefix(expr[k:], "by") || strings.HasPrefix(expr[k:], "without")):
			default:
				s := selector{metric: word}
				if k < len(expr) && expr[k] == '{' {
					s.labels, j = matchers(k)
				}
				q.selectors = append(q.selectors, s)
			}
			i = j
		default:
			i++
		}
	}
	return q, nil
}

// check fails the test for every family or label of expr that the registry does not have; recorded names
// (the rules' own) count as families with the labels their rule keeps.
func check(t *testing.T, where, expr string, fams map[string][]string, recorded map[string]bool) {
	t.Helper()
	q, err := parseQuery(expr)
	if err != nil {
		t.Errorf("%s: %v", where, err)
		return
	}
	if len(q.selectors) == 0 {
		t.Errorf("%s: %q names no metric", where, expr)
	}
	allowed := slices.Clone(targetLabels)
	for _, s := range q.selectors {
		if s.metric == "" {
			t.Errorf("%s: %q selects series without a metric name", where, expr)
			continue
		}
		if recorded[s.metric] {
			allowed = append(allowed, "source", "outcome", "le")
			continue
		}
		labels, ok := family(fams, s.metric)
		if !ok {
			t.Errorf("%s: %s is not a metric family the server registers (in %q)", where, s.metric, expr)
			continue
		}
		allowed = append(allowed, labels...)
		for _, l := range s.labels {
			if !slices.Contains(labels, l) && !slices.Contains(targetLabels, l) {
				t.Errorf("%s: %s has no label %q (it has %v) in %q", where, s.metric, l, labels, expr)
			}
		}
	}
	for _, l := range q.grouping {
		if !slices.Contains(allowed, l) {
			t.Errorf("%s: no metric of %q has the label %q it groups by", where, expr, l)
		}
	}
}

// family resolves name to a registered family, a histogram's or summary's _bucket, _sum and _count series
// included, and returns the labels its series can carry.
func family(fams map[string][]string, name string) ([]string, bool) {
	if labels, ok := fams[name]; ok {
		return append(slices.Clone(labels), "quantile"), true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok {
			if labels, ok := fams[base]; ok {
				if suffix == "_bucket" {
					labels = append(slices.Clone(labels), "le")
				}
				return labels, true
			}
		}
	}
	return nil, false
}

func TestDashboardQueriesRegisteredMetrics(t *testing.T) {
	fams := registeredFamilies(t)
	files, err := filepath.Glob(filepath.Join(deployDir, "grafana", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no dashboard under deploy/grafana: %v", err)
	}
	labelValues := regexp.MustCompile(`^label_values\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*)\s*,\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\)$`)
	for _, file := range files {
		raw, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var dash map[string]any
		if err := json.Unmarshal(raw, &dash); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		exprs := 0
		used := map[string]bool{}
		walkJSON(dash, "", func(path string, key string, v string) {
			switch {
			case key == "expr":
				exprs++
				check(t, filepath.Base(file)+" "+path, v, fams, nil)
				q, _ := parseQuery(v)
				for _, s := range q.selectors {
					used[s.metric] = true
				}
			case strings.HasPrefix(path, "/templating") && (key == "query" || key == "definition") && strings.HasPrefix(v, "label_values"):
				sm := labelValues.FindStringSubmatch(v)
				if sm == nil {
					t.Errorf("%s %s: cannot read %q", file, path, v)
					return
				}
				labels, ok := family(fams, sm[1])
				if !ok || !slices.Contains(append(labels, targetLabels...), sm[2]) {
					t.Errorf("%s %s: %q: no registered family %s with label %s", file, path, v, sm[1], sm[2])
				}
			}
		})
		if exprs < 10 {
			t.Errorf("%s: only %d queries found: is it still a dashboard?", file, exprs)
		}
		var unused []string
		for name := range fams {
			if strings.HasPrefix(name, "ejserver_") && !used[name] && !used[name+"_bucket"] {
				unused = append(unused, name)
			}
		}
		slices.Sort(unused)
		t.Logf("%s: %d queries; ejserver families not on it: %v", filepath.Base(file), exprs, unused)
	}
}

func TestRulesQueryRegisteredMetrics(t *testing.T) {
	fams := registeredFamilies(t)
	raw, err := os.ReadFile(filepath.Join(deployDir, "prometheus", "ejserver-rules.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Groups []struct {
			Name  string `yaml:"name"`
			Rules []struct {
				Record string `yaml:"record"`
				Alert  string `yaml:"alert"`
				Expr   string `yaml:"expr"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(raw, &file); err != nil {
		t.Fatal(err)
	}
	recorded := map[string]bool{}
	n := 0
	for _, g := range file.Groups {
		for _, r := range g.Rules {
			n++
			name := r.Record + r.Alert
			check(t, g.Name+"/"+name, r.Expr, fams, recorded)
			if r.Record != "" {
				recorded[r.Record] = true // rules may use the records defined above them
			}
		}
	}
	if n < 10 {
		t.Fatalf("only %d rules read", n)
	}
}

func TestParseQuery(t *testing.T) {
	tests := []struct {
		expr      string
		selectors []selector
		grouping  []string
	}{
		{`rate(a_total{x="1",y=~"b|c"}[5m])`, []selector{{"a_total", []string{"x", "y"}}}, nil},
		{`histogram_quantile(0.99, sum by (le, source) (rate(h_bucket{instance=~"$instance"}[$__rate_interval])))`,
			[]selector{{"h_bucket", []string{"instance"}}}, []string{"le", "source"}},
		{`sum without (instance) (a) / on (job) group_left (x) b > 0.5 and c offset 5m`,
			[]selector{{"a", nil}, {"b", nil}, {"c", nil}}, []string{"instance", "job", "x"}},
		{`absent(up == 1)`, []selector{{"up", nil}}, nil},
		{`ejserver:rec:rate5m{source="NORMAL_TRIGGER"} > 1e3`, []selector{{"ejserver:rec:rate5m", []string{"source"}}}, nil},
		{`label_replace(a, "dst", "$1", "src", "(.*)")`, []selector{{"a", nil}}, nil},
	}
	for _, tt := range tests {
		q, err := parseQuery(tt.expr)
		if err != nil {
			t.Errorf("%q: %v", tt.expr, err)
			continue
		}
		if !slices.EqualFunc(q.selectors, tt.selectors, func(a, b selector) bool {
			return a.metric == b.metric && slices.Equal(a.labels, b.labels)
		}) || !slices.Equal(q.grouping, tt.grouping) {
			t.Errorf("%q: got %+v %v, want %+v %v", tt.expr, q.selectors, q.grouping, tt.selectors, tt.grouping)
		}
	}
}

// walkJSON calls fn with every string value under v, its JSON path and its key.
func walkJSON(v any, path string, fn func(path, key, value string)) {
	switch v := v.(type) {
	case map[string]any:
		for k, child := range v {
			if s, ok := child.(string); ok {
				fn(path+"/"+k, k, s)
				continue
			}
			walkJSON(child, path+"/"+k, fn)
		}
	case []any:
		for i, child := range v {
			walkJSON(child, path+"/"+strconv.Itoa(i), fn)
		}
	}
}
