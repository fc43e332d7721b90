package access

import (
	"reflect"
	"strings"
	"testing"
)

var teamA = Scope{Prefixes: []string{"team-a-"}, Labels: []string{"payments"}}

func TestDecide(t *testing.T) {
	type row struct {
		rule                                Rule
		admin, operator, viewer             Decision // unscoped
		scopedAdmin, scopedOp, scopedViewer Decision
	}
	A, F, H, N := Allow, Forbid, Hide, NotAPI
	tests := map[string]row{
		"public":           {Rule{Read, Public}, N, N, N, N, N, N},
		"callback":         {Rule{Operate, CallbackToken}, N, N, N, N, N, N},
		"cron preview":     {Rule{Read, Nothing}, A, A, A, A, A, A},
		"read a job":       {Rule{Read, OneJob}, A, A, A, A, A, A},
		"trigger a job":    {Rule{Operate, OneJob}, A, A, F, A, A, F},
		"delete a job":     {Rule{Manage, OneJob}, A, F, F, A, F, F},
		"list jobs":        {Rule{Read, JobRows}, A, A, A, A, A, A},
		"create a job":     {Rule{Manage, JobRows}, A, F, F, A, F, F},
		"list servers":     {Rule{Read, Cluster}, A, A, A, H, H, H},
		"disable a server": {Rule{Administer, Cluster}, A, F, F, H, F, F},
		"unknown reach":    {Rule{Read, Reach(99)}, F, F, F, F, F, F},
		"unknown action":   {Rule{Action(99), OneJob}, F, F, F, F, F, F},
		"zero rule":        {Rule{}, F, F, F, F, F, F},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			got := []Decision{
				Decide(Grant{Role: Admin}, tt.rule), Decide(Grant{Role: Operator}, tt.rule), Decide(Grant{Role: Viewer}, tt.rule),
				Decide(Grant{Admin, teamA}, tt.rule), Decide(Grant{Operator, teamA}, tt.rule), Decide(Grant{Viewer, teamA}, tt.rule),
			}
			want := []Decision{tt.admin, tt.operator, tt.viewer, tt.scopedAdmin, tt.scopedOp, tt.scopedViewer}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("admin, operator, viewer, then scoped: got %v, want %v", got, want)
			}
		})
	}
	if Decide(Grant{Role: "root"}, Rule{Read, Nothing}) != Forbid {
		t.Fatal("an unknown role may read")
	}
}

func TestCan(t *testing.T) {
	if !(Grant{Role: Admin}).Can(Administer) || (Grant{Admin, teamA}).Can(Administer) {
		t.Fatal("only an unscoped admin administers")
	}
	if !(Grant{Operator, teamA}).Can(Operate) || (Grant{Operator, teamA}).Can(Manage) || (Grant{Role: Viewer}).Can(Operate) {
		t.Fatal("operate/manage")
	}
}

func TestParseScope(t *testing.T) {
	good := []struct {
		in   string
		want Scope
	}{
		{"prefix:team-a-", Scope{Prefixes: []string{"team-a-"}}},
		{"label:payments", Scope{Labels: []string{"payments"}}},
		{"prefix:team-a-|label:payments|prefix:shared.", Scope{Prefixes: []string{"team-a-", "shared."}, Labels: []string{"payments"}}},
		{"label:Ünïcode,ok", Scope{Labels: []string{"Ünïcode,ok"}}},
	}
	for _, tt := range good {
		got, err := ParseScope(tt.in)
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Fatalf("ParseScope(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
	}
	bad := []struct{ in, want string }{
		{"", "scope is empty"},
		{"team-a-", `scope alternative 1 "team-a-": want prefix:`},
		{"name:x", `scope alternative 1 "name:x": want prefix:`},
		{"prefix:", "scope alternative 1: prefix: is empty"},
		{"prefix:a|label:", "scope alternative 2: label: is empty"},
		{"prefix:a/b", `scope alternative 1: prefix "a/b" may only hold`},
		{"prefix:-a", `scope alternative 1: prefix "-a" may only hold`},
		{"label:a\tb", "scope alternative 1: label \"a\\tb\" holds a space"},
		{"prefix:a|prefix:a", "scope alternative 2: prefix:a is given twice"},
		{"prefix:" + strings.Repeat("a", 129), "scope alternative 1: prefix: is 129 characters long"},
		{strings.Repeat("prefix:a|", 33), "scope has 34 alternatives"},
		{"prefix:a||label:b", `scope alternative 2 "": want`},
	}
	for _, tt := range bad {
		_, err := ParseScope(tt.in)
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Fatalf("ParseScope(%q): error %v, want prefix %q", tt.in, err, tt.want)
		}
	}
}

func TestInScope(t *testing.T) {
	tests := []struct {
		name, label string
		want        bool
	}{
		{"team-a-nightly", "", true},
		{"team-a-", "", true},
		{"team-b-nightly", "payments", true},
		{"team-b-nightly", "Payments", false}, // labels match exactly
		{"team-b-nightly", "", false},
		{"TEAM-A-x", "", false}, // prefixes are case-sensitive, as job names are
		{"team-a", "", false},
	}
	for _, tt := range tests {
		if got := teamA.InScope(tt.name, tt.label); got != tt.want {
			t.Errorf("InScope(%q, %q) = %v, want %v", tt.name, tt.label, got, tt.want)
		}
	}
	if !(Scope{}).InScope("anything", "") {
		t.Fatal("the zero scope is every job")
	}
	if !(Scope{Prefixes: []string{"a"}}).ByNameOnly() || teamA.ByNameOnly() {
		t.Fatal("ByNameOnly")
	}
}

// A parsed scope writes back to what parses to the same scope, and a scope never holds an empty part.
func FuzzParseScope(f *testing.F) {
	for _, s := range []string{"prefix:team-a-", "label:payments|prefix:x", "label:", "prefix:a|prefix:a", "a:b:c|"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		s, err := ParseScope(in)
		if err != nil {
			if s.Prefixes != nil || s.Labels != nil {
				t.Fatalf("an error with a scope: %+v", s)
			}
			return
		}
		if s.Unscoped() {
			t.Fatalf("%q parsed to the unscoped scope", in)
		}
		again, err := ParseScope(s.String())
		if err != nil || !reflect.DeepEqual(again, s) {
			t.Fatalf("%q: %+v writes as %q, which parses to %+v, %v", in, s, s.String(), again, err)
		}
		for _, p := range s.Prefixes {
			if !s.InScope(p+"x", "") || p == "" {
				t.Fatalf("prefix %q", p)
			}
		}
		for _, l := range s.Labels {
			if !s.InScope("\x00", l) || l == "" {
				t.Fatalf("label %q", l)
			}
		}
	})
}
