package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ejserver/ejserver/integration/harness"
)

// cliRun runs `ejserver ARGS...` as a user would, with env added to the test's environment.
func cliRun(t *testing.T, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env = append(append(os.Environ(), "EJ_SERVER=", "EJ_TOKEN=", "EJ_API_TOKEN="), env...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	return o.String(), e.String(), exitCode(err)
}

// cliOK runs the CLI and fails the test unless it exits 0.
func cliOK(t *testing.T, env []string, args ...string) string {
	t.Helper()
	out, errOut, code := cliRun(t, env, args...)
	if code != 0 {
		t.Fatalf("ejserver %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}

func writeFile(t *testing.T, dir, name, body string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// The CLI of the same binary against a real server with tokens: apply is idempotent and says what changed,
// every command works in tables and JSON, and errors carry the problem.
func TestCLIAgainstARealServer(t *testing.T) {
	t.Parallel()
	recv := newReceiver(t)
	c := newCluster(t, 1, withArgs("--api-tokens", tokensFile(t)))
	p := c.peers[0]
	admin := []string{"EJ_SERVER=" + p.Addr, "EJ_TOKEN=" + adminToken} // no scheme: the CLI adds http://
	viewer := []string{"--server", "http://" + p.Addr, "--token", viewerToken}
	dir := t.TempDir()

	jobs := fmt.Sprintf(`# jobs in git
- jobName: nightly
  cron: "0 0 3 * * ?"
  timeZone: Asia/Shanghai
  shardingTotalCount: 3
  shardingItemParameters: 0=Beijing,1=Shanghai,2=Guangzhou
  webhook:
    url: %[1]s
    secret: %[2]s
- jobName: adhoc
  shardingTotalCount: 2
  webhook: {url: %[1]q}
`, recv.URL, testSecret)
	file := writeFile(t, dir, "jobs.yaml", jobs)
	if out := cliOK(t, admin, "job", "apply", "-f", file); out != "created nightly\ncreated adhoc\n" {
		t.Fatalf("first apply:\n%s", out)
	}
	versions := func() string {
		var a, b map[string]any
		json.Unmarshal([]byte(cliOK(t, admin, "job", "get", "nightly", "-o", "json")), &a)
		json.Unmarshal([]byte(cliOK(t, admin, "job", "get", "adhoc", "-o", "json")), &b)
		return fmt.Sprint(a["version"], b["version"])
	}
	first := versions()
	if out := cliOK(t, admin, "job", "apply", "-f", file); out != "unchanged nightly\nunchanged adhoc\n" {
		t.Fatalf("second apply:\n%s", out)
	}
	if second := versions(); first != second || first != "0 0" {
		t.Fatalf("the second apply changed versions: %s -> %s", first, second)
	}
	changed := strings.Replace(jobs, `cron: "0 0 3 * * ?"`, `cron: "0 30 3 * * ?"`, 1)
	changed = strings.Replace(changed, "shardingTotalCount: 2\n", "shardingTotalCount: 2\n  jobParameter: batch=10\n", 1)
	file = writeFile(t, dir, "jobs.yaml", changed)
	if out := cliOK(t, admin, "job", "apply", "-f", file, "--dry-run"); out != "would be replaced nightly (cron)\nwould be replaced adhoc (jobParameter)\n" {
		t.Fatalf("dry run:\n%s", out)
	}
	if out := cliOK(t, admin, "job", "apply", "-f", file); out != "replaced nightly (cron)\nreplaced adhoc (jobParameter)\n" {
		t.Fatalf("apply of a change:\n%s", out)
	}
	var got map[string]any
	mustDo(t, p, "GET", "/api/v1/jobs/nightly", nil, http.StatusOK, &got, "Authorization", "Bearer "+adminToken)
	if got["cron"] != "0 30 3 * * ?" || got["webhook"].(map[string]any)["hasSecret"] != true {
		t.Fatalf("after apply: %v", got)
	}

	// a bad file changes nothing and names the entry and the field
	bad := writeFile(t, dir, "bad.yaml", fmt.Sprintf("- jobName: fresh\n  shardingTotalCount: 1\n  webhook: {url: %q}\n- jobName: nightly\n  cron: 0 0 25 * * ?\n  shardingTotalCount: 3\n  webhook: {url: %q}\n", recv.URL, recv.URL))
	_, errOut, code := cliRun(t, admin, "job", "apply", "-f", bad)
	if code != 1 || !strings.Contains(errOut, "bad.yaml:4 (job 2, nightly): cron: ") {
		t.Fatalf("bad file: exit %d: %s", code, errOut)
	}
	mustDo(t, p, "GET", "/api/v1/jobs/fresh", nil, http.StatusNotFound, nil, "Authorization", "Bearer "+adminToken)

	// reads with a viewer token, tables and JSON
	table := cliOK(t, nil, after(viewer, "job", "list")...)
	if !strings.HasPrefix(table, "NAME ") || !strings.Contains(table, "nightly ") || !strings.Contains(table, "adhoc ") {
		t.Fatalf("job list:\n%s", table)
	}
	if out := cliOK(t, nil, after(viewer, "job", "get", "nightly")...); !strings.Contains(out, "time zone") || !strings.Contains(out, "Asia/Shanghai") ||
		strings.Contains(out, testSecret) {
		t.Fatalf("job get:\n%s", out)
	}
	var one map[string]any
	if err := json.Unmarshal([]byte(cliOK(t, nil, after(viewer, "job", "get", "nightly", "-o", "json")...)), &one); err != nil || one["jobName"] != "nightly" {
		t.Fatalf("job get -o json: %v %v", one, err)
	}
	if out := cliOK(t, nil, after(viewer, "cron", "next", "0 15 10 L * ?", "--tz", "Asia/Shanghai", "--count", "2", "--from", "2026-11-21T00:00:00Z")...); !strings.HasSuffix(out, "2026-11-30T10:15:00+08:00\n2026-12-31T10:15:00+08:00\n") {
		t.Fatalf("cron next:\n%s", out)
	}
	_, errOut, code = cliRun(t, nil, after(viewer, "cron", "next", "0 0 25 * * ?")...)
	if code != 1 || !strings.Contains(errOut, "400 Invalid request: cron: ") {
		t.Fatalf("bad cron: exit %d: %s", code, errOut)
	}

	// writes: a viewer is refused, no token is told how to send one
	_, errOut, code = cliRun(t, nil, after(viewer, "job", "delete", "adhoc")...)
	if code != 1 || !strings.Contains(errOut, "403 Forbidden") {
		t.Fatalf("viewer delete: exit %d: %s", code, errOut)
	}
	_, errOut, code = cliRun(t, []string{"EJ_SERVER=" + p.Addr}, "job", "list")
	if code != 1 || !strings.Contains(errOut, "401 Unauthorized") || !strings.Contains(errOut, "EJ_TOKEN") {
		t.Fatalf("no token: exit %d: %s", code, errOut)
	}

	out := cliOK(t, admin, "job", "trigger", "nightly", "--param", "by-hand", "--items", "0,2")
	if !strings.Contains(out, "INSTANCE") || !strings.Contains(out, p.InstanceID()) {
		t.Fatalf("trigger:\n%s", out)
	}
	ds, ok := recv.WaitFor(20*time.Second, func(ds []harness.Delivery) bool { return len(ds) >= 2 })
	if !ok {
		t.Fatalf("trigger delivered %d items", len(ds))
	}
	for _, d := range ds {
		if d.Payload.JobParameter != "by-hand" || d.Payload.Source != "MANUAL" || (d.Payload.ShardingItem != 0 && d.Payload.ShardingItem != 2) {
			t.Fatalf("delivery %+v", d.Payload)
		}
	}
	if out := cliOK(t, admin, "job", "sharding", "nightly"); !strings.HasPrefix(out, "ITEM ") || !strings.Contains(out, "Guangzhou") {
		t.Fatalf("sharding:\n%s", out)
	}
	if !eventually(20*time.Second, func() bool {
		return strings.Count(cliOK(t, admin, "job", "history", "nightly"), "MANUAL") == 2
	}) {
		t.Fatalf("history:\n%s", cliOK(t, admin, "job", "history", "nightly"))
	}
	// the same executions by id and filtered, through `execution get|list`
	var done struct {
		Items []struct {
			ID           string `json:"id"`
			ShardingItem int    `json:"shardingItem"`
		} `json:"items"`
	}
	if !eventually(20*time.Second, func() bool {
		return json.Unmarshal([]byte(cliOK(t, nil, after(viewer, "execution", "list", "--job", "nightly", "--succeeded", "--json")...)), &done) == nil &&
			len(done.Items) == 2
	}) {
		t.Fatalf("execution list --succeeded: %+v", done)
	}
	if out := cliOK(t, nil, after(viewer, "execution", "get", done.Items[0].ID)...); !strings.Contains(out, "nightly") ||
		!strings.Contains(out, "MANUAL") || !strings.Contains(out, " ok\n") {
		t.Fatalf("execution get:\n%s", out)
	}
	if out := cliOK(t, admin, "execution", "list", "--job", "nightly", "--item", "2"); strings.Count(out, "MANUAL") != 1 {
		t.Fatalf("execution list --item 2:\n%s", out)
	}
	if out := cliOK(t, admin, "execution", "list", "--running", "--json"); !strings.Contains(out, `"items": []`) {
		t.Fatalf("execution list --running:\n%s", out)
	}
	if out := cliOK(t, admin, "job", "disable", "nightly"); out != "job nightly disabled (status DISABLED)\n" {
		t.Fatalf("disable: %q", out)
	}
	_, errOut, code = cliRun(t, admin, "job", "trigger", "nightly")
	if code != 1 || !strings.Contains(errOut, "409 Conflict") {
		t.Fatalf("trigger a disabled job: exit %d: %s", code, errOut)
	}
	cliOK(t, admin, "job", "enable", "nightly")
	if out := cliOK(t, admin, "server", "list"); !strings.Contains(out, p.Config.ServerIP) {
		t.Fatalf("server list:\n%s", out)
	}
	if out := cliOK(t, admin, "server", "disable", p.Config.ServerIP); out != "server "+p.Config.ServerIP+" disabled for 2 job(s)\n" {
		t.Fatalf("server disable: %q", out)
	}
	cliOK(t, admin, "server", "enable", p.Config.ServerIP)
	if out := cliOK(t, admin, "instance", "list"); !strings.Contains(out, p.InstanceID()+" (answered)") {
		t.Fatalf("instance list:\n%s", out)
	}
	if out := cliOK(t, admin, "job", "delete", "adhoc"); out != "deleted job adhoc\n" {
		t.Fatalf("delete: %q", out)
	}
	_, errOut, code = cliRun(t, admin, "job", "get", "adhoc")
	if code != 1 || !strings.Contains(errOut, "404 Not found") {
		t.Fatalf("get a deleted job: exit %d: %s", code, errOut)
	}
	if _, _, code := cliRun(t, admin, "job", "get"); code != 2 {
		t.Fatalf("a missing argument: exit %d, want 2", code)
	}

	// a token made by `ejserver token new` works from the hash alone
	newTok := cliOK(t, nil, "token", "new", "--role", "viewer", "--name", "ci")
	var secret, line string
	for _, l := range strings.Split(newTok, "\n") {
		if s, ok := strings.CutPrefix(l, "token: "); ok {
			secret = s
		}
		if s, ok := strings.CutPrefix(l, "tokens-file line (holds only the hash): "); ok {
			line = s
		}
	}
	if secret == "" || !strings.HasPrefix(line, "viewer ci sha256:") || strings.Contains(line, secret) {
		t.Fatalf("token new:\n%s", newTok)
	}
	c2 := newCluster(t, 1, withArgs("--api-tokens", writeFile(t, dir, "tokens2", line+"\n")))
	if out := cliOK(t, nil, "job", "list", "--server", c2.peers[0].Addr, "--token", secret, "-o", "json"); strings.TrimSpace(out) != "[]" {
		t.Fatalf("list with the new token: %q", out)
	}
}

// `serve --jobs`: missing jobs are created at start-up; an existing one is replaced only when its entry
// says overwrite: true (ElasticJob's semantics), and then only when it differs; a bad file stops the start
// before anything is stored.
func TestServeAppliesAJobsFile(t *testing.T) {
	t.Parallel()
	recv := newReceiver(t)
	dir := t.TempDir()
	file := writeFile(t, dir, "jobs.yaml", fmt.Sprintf(`
- jobName: kept
  cron: "@hourly"
  shardingTotalCount: 1
  webhook: {url: %[1]q}
- jobName: owned
  cron: "@daily"
  shardingTotalCount: 2
  overwrite: true
  webhook: {url: %[1]q}
`, recv.URL))
	c := newCluster(t, 1, withArgs("--jobs", file))
	p := c.peers[0]
	var kept, owned map[string]any
	mustDo(t, p, "GET", "/api/v1/jobs/kept", nil, http.StatusOK, &kept)
	mustDo(t, p, "GET", "/api/v1/jobs/owned", nil, http.StatusOK, &owned)
	if kept["cron"] != "@hourly" || owned["cron"] != "@daily" || owned["overwrite"] != true {
		t.Fatalf("created: %v %v", kept, owned)
	}

	// operators change both through the API; a restart with the file keeps one change and undoes the other
	for _, name := range []string{"kept", "owned"} {
		var cur map[string]any
		mustDo(t, p, "GET", "/api/v1/jobs/"+name, nil, http.StatusOK, &cur)
		mustDo(t, p, "PUT", "/api/v1/jobs/"+name, map[string]any{"jobName": name, "cron": "@weekly", "shardingTotalCount": 1,
			"overwrite": cur["overwrite"], "webhook": map[string]any{"url": recv.URL}}, http.StatusOK, nil)
	}
	if err := p.Stop(15 * time.Second); err != nil {
		t.Fatal(err)
	}
	if err := p.Restart(); err != nil {
		t.Fatal(err)
	}
	mustDo(t, p, "GET", "/api/v1/jobs/kept", nil, http.StatusOK, &kept)
	mustDo(t, p, "GET", "/api/v1/jobs/owned", nil, http.StatusOK, &owned)
	if kept["cron"] != "@weekly" || owned["cron"] != "@daily" || owned["shardingTotalCount"] != float64(2) {
		t.Fatalf("after a restart: kept %v, owned %v", kept["cron"], owned["cron"])
	}
	// a second peer with the same file finds everything as the file says: nothing is written
	p2 := c.add(withArgs("--jobs", file))
	var again map[string]any
	mustDo(t, p2, "GET", "/api/v1/jobs/owned", nil, http.StatusOK, &again)
	if again["version"] != owned["version"] {
		t.Fatalf("the second peer rewrote an unchanged job: version %v -> %v", owned["version"], again["version"])
	}
	if !strings.Contains(p2.Log(), `msg="jobs file applied" instance=`+p2.InstanceID()+` jobs=2 created=0 replaced=0 unchanged=1 kept=1`) {
		t.Fatal("the second peer's log doesn't report the jobs file")
	}

	// the audit trail (SQLite: each peer's own store): the file's creations and its replacement, with actor
	// jobs-file and their differences, around the API's replacements; nothing for what it left as it was
	var trail struct{ Items []auditEntry }
	mustDo(t, p, "GET", "/api/v1/audit?limit=100", nil, http.StatusOK, &trail)
	var got []string
	var replaced auditEntry
	for i := len(trail.Items) - 1; i >= 0; i-- {
		e := trail.Items[i]
		got = append(got, e.ActorKind+" "+e.Actor+" "+e.Action+" "+e.Job+" "+e.Detail)
		if e.Action == "jobsfile.apply" && strings.HasPrefix(e.Detail, "job replaced") {
			replaced = e
		}
	}
	want := []string{
		"jobs-file jobs-file jobsfile.apply kept job created from " + file + ":2 (job 1, kept)",
		"jobs-file jobs-file jobsfile.apply owned job created from " + file + ":6 (job 2, owned)",
		"open  job.replace kept ", "open  job.replace owned ",
		"jobs-file jobs-file jobsfile.apply owned job replaced from " + file + ":6 (job 2, owned)",
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("audit trail:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if !reflect.DeepEqual(replaced.Changes, []auditChange{{Field: "cron", Before: "@weekly", After: "@daily"},
		{Field: "shardingTotalCount", Before: "1", After: "2"}}) {
		t.Fatalf("the replacement's changes: %+v", replaced.Changes)
	}
	mustDo(t, p2, "GET", "/api/v1/audit", nil, http.StatusOK, &trail)
	if len(trail.Items) != 0 {
		t.Fatalf("the second peer, which wrote nothing, recorded %+v", trail.Items)
	}

	// a bad file: the peer does not start, says where, and stores nothing
	bad := writeFile(t, dir, "bad.yaml", fmt.Sprintf("- jobName: early\n  shardingTotalCount: 1\n  webhook: {url: %q}\n- jobName: late\n  shardingTotalCount: 1\n  webhook: {url: %q, timeout: 5}\n", recv.URL, recv.URL))
	_, err := harness.StartPeer(harness.PeerConfig{Binary: binary, ZK: c.zk, Namespace: c.ns, ServerIP: "127.0.0.8",
		DataDir: filepath.Join(dir, "bad"), ExtraArgs: []string{"--jobs", bad}})
	if err == nil || !strings.Contains(err.Error(), "bad.yaml:4 (job 2, late): webhook.timeout: unknown field") {
		t.Fatalf("a bad jobs file: %v", err)
	}
	mustDo(t, p, "GET", "/api/v1/jobs/early", nil, http.StatusNotFound, nil)
}

// after puts flags after the command's words, as users type them.
func after(flags []string, words ...string) []string { return append(words, flags...) }
