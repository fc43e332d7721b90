package integration

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ejserver/ejserver/integration/harness"
)

func withEnv(env ...string) clusterOpt {
	return func(c *harness.PeerConfig) { c.Env = append(c.Env, env...) }
}

// serveCmd is `ejserver serve` on the test's namespace, run by hand (for start-ups the harness can't wait on).
func serveCmd(t *testing.T, c *testCluster, ctx context.Context, listen string, args ...string) *exec.Cmd {
	t.Helper()
	all := append([]string{"serve", "--zk", c.zk, "--namespace", c.ns, "--listen", listen, "--server-ip", "127.0.0.9",
		"--data-dir", t.TempDir(), "--session-timeout", "4s"}, args...)
	cmd := exec.CommandContext(ctx, binary, all...)
	cmd.Env = os.Environ()
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return cmd
}

// Without tokens the API stays on loopback; beyond it only with --insecure, and both say so.
func TestOpenAPIOnlyOnLoopbackUnlessInsecure(t *testing.T) {
	t.Parallel()
	c := newCluster(t, 0)
	port, err := harness.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	everywhere := fmt.Sprintf("0.0.0.0:%d", port)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := serveCmd(t, c, ctx, everywhere).CombinedOutput()
	if code := exitCode(err); code != 1 || !strings.Contains(string(out), "--insecure") {
		t.Fatalf("an open API on %s: exit %d, want 1 naming --insecure:\n%s", everywhere, code, out)
	}

	// --insecure: it serves (reached here through loopback) and warns
	logPath := filepath.Join(t.TempDir(), "log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cmd := serveCmd(t, c, ctx, everywhere, "--insecure")
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}()
	ready := eventually(20*time.Second, func() bool {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/readyz", port))
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
	log, _ := os.ReadFile(logPath)
	if !ready || !strings.Contains(string(log), "API has no tokens and listens beyond loopback (--insecure)") {
		t.Fatalf("--insecure: ready %v, log:\n%s", ready, log)
	}

	// the usual loopback peer (the harness's) warns but serves an open API
	p := c.add()
	mustDo(t, p, "GET", "/api/v1/jobs", nil, http.StatusOK, nil)
	if !strings.Contains(p.Log(), "API has no tokens: anyone on this machine can change jobs; listening on loopback only") {
		t.Fatal("no warning about the open API")
	}
}

func exitCode(err error) int {
	if err == nil {
		return 0
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	return -1
}

// EJ_API_TOKEN is one admin token; --metrics-auth puts /metrics behind any token; /healthz and /readyz
// stay open; a token is never logged, not even a wrong one.
func TestEnvTokenAndMetricsAuth(t *testing.T) {
	t.Parallel()
	const envToken = "env-admin-token-0123456789"
	c := newCluster(t, 1, withEnv("EJ_API_TOKEN="+envToken), withArgs("--metrics-auth", "--api-tokens", tokensFile(t)))
	p := c.peers[0]
	bearer := func(tok string) []string { return []string{"Authorization", "Bearer " + tok} }

	mustDo(t, p, "GET", "/healthz", nil, http.StatusOK, nil)
	mustDo(t, p, "GET", "/readyz", nil, http.StatusOK, nil)
	mustDo(t, p, "GET", "/openapi/openapi3.json", nil, http.StatusOK, nil)
	mustDo(t, p, "GET", "/api/v1/jobs", nil, http.StatusUnauthorized, nil)
	mustDo(t, p, "GET", "/api/v1/jobs", nil, http.StatusUnauthorized, nil, bearer("not-"+envToken)...)
	mustDo(t, p, "POST", "/api/v1/jobs", job("envjob", "", 1, "http://127.0.0.1:9/x"), http.StatusCreated, nil, bearer(envToken)...)
	mustDo(t, p, "DELETE", "/api/v1/jobs/envjob", nil, http.StatusForbidden, nil, bearer(viewerToken)...)
	mustDo(t, p, "DELETE", "/api/v1/jobs/envjob", nil, http.StatusNoContent, nil, bearer(adminToken)...)

	status, _, err := p.Do("GET", "/metrics", nil, nil)
	if err != nil || status != http.StatusUnauthorized {
		t.Fatalf("/metrics without a token: %d %v", status, err)
	}
	status, body, err := p.Do("GET", "/metrics", nil, nil, bearer(viewerToken)...)
	if err != nil || status != http.StatusOK || !strings.Contains(string(body), "# HELP") {
		t.Fatalf("/metrics with a viewer token: %d %v", status, err)
	}
	log := p.Log()
	if strings.Contains(log, envToken) || strings.Contains(log, viewerToken) || strings.Contains(log, adminToken) {
		t.Fatal("a token is in the log")
	}
	if !strings.Contains(log, "admin_tokens=ops,EJ_API_TOKEN viewer_tokens=grafana") {
		t.Fatal("the log doesn't say which tokens are configured")
	}
}

// --zk-digest: other ZooKeeper clients (zkCli without the digest) read ejserver's nodes but can't change
// them, while ejserver itself keeps working.
func TestZKDigestKeepsOtherClientsFromWriting(t *testing.T) {
	t.Parallel()
	recv := newReceiver(t)
	c := newCluster(t, 1, withArgs("--zk-digest", "ejserver:digest-s3cret"))
	p := c.peers[0]
	mustDo(t, p, "POST", "/api/v1/jobs", job("guarded", "", 2, recv.URL), http.StatusCreated, nil)
	before := mustDo(t, p, "GET", "/api/v1/jobs/guarded/dump", nil, http.StatusOK, nil)

	base := "/" + c.ns + "/guarded"
	if out := zkCliOut(t, c.zk, "get", base+"/config"); !strings.Contains(out, "jobName: guarded") {
		t.Fatalf("an anonymous client can't read the config:\n%s", out)
	}
	if out := zkCliOut(t, c.zk, "getAcl", base+"/config"); !strings.Contains(out, "'digest,'ejserver:") || !strings.Contains(out, "'world,'anyone\n: r") {
		t.Fatalf("config ACL:\n%s", out)
	}
	// the callback token secret is not even readable without the digest: a reader of the registry can't mint tokens
	if out := zkCliOut(t, c.zk, "get", "/"+c.ns+".ejserver/callback-secret"); !strings.Contains(out, "Insufficient permission") {
		t.Fatalf("an anonymous client can read the callback secret:\n%s", out)
	}
	for _, args := range [][]string{
		{"set", base + "/config", "jobName: hijacked"},
		{"create", base + "/evil", ""},
		{"delete", base + "/servers/" + p.Config.ServerIP},
		{"create", "/" + c.ns + "/intruder", ""},
	} {
		if out := zkCliOut(t, c.zk, args...); !strings.Contains(out, "Insufficient permission") {
			t.Fatalf("zkCli %v without the digest was not refused:\n%s", args, out)
		}
	}
	after := mustDo(t, p, "GET", "/api/v1/jobs/guarded/dump", nil, http.StatusOK, nil)
	cfgLine := func(dump []byte) string {
		for _, line := range strings.Split(string(dump), "\n") {
			if strings.Contains(line, "/guarded/config |") {
				return line
			}
		}
		return ""
	}
	if cfgLine(before) == "" || cfgLine(before) != cfgLine(after) || strings.Contains(string(after), "/evil") ||
		!strings.Contains(string(after), "/servers/"+p.Config.ServerIP+" |") {
		t.Fatalf("the registry changed:\nbefore %s\nafter  %s", before, after)
	}
	// ejserver itself still writes
	mustDo(t, p, "POST", "/api/v1/jobs/guarded/sharding/0/disable", nil, http.StatusNoContent, nil)
	mustDo(t, p, "POST", "/api/v1/jobs/guarded/trigger", map[string]any{"items": []int{1}}, http.StatusAccepted, nil)
	if _, ok := recv.WaitFor(20*time.Second, func(ds []harness.Delivery) bool { return len(ds) >= 1 }); !ok {
		t.Fatal("the trigger was not delivered")
	}
	if strings.Contains(p.Log(), "digest-s3cret") {
		t.Fatal("the digest password is in the log")
	}
}

// zkCliOut runs ZooKeeper's CLI and returns its output whatever its exit status (it exits 0 on some
// errors and non-zero on others).
func zkCliOut(t *testing.T, server string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, _ := exec.CommandContext(ctx, "/usr/share/zookeeper/bin/zkCli.sh", append([]string{"-server", server}, args...)...).CombinedOutput()
	return string(out)
}
