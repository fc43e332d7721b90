package deploy

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// binary is the real ejserver, built from the repository around this module.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "ejdeploy-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "ejserver")
	build := exec.Command("go", "build", "-o", binary, "./cmd/ejserver")
	build.Dir = ".."
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build ejserver: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// serveEnv returns the environment variables `ejserver serve` reads, from its own --help.
func serveEnv(t *testing.T) map[string]bool {
	t.Helper()
	out, _ := exec.Command(binary, "serve", "--help").CombinedOutput()
	vars := map[string]bool{}
	for _, m := range regexp.MustCompile(`\[(EJ_[A-Z_]+)\]`).FindAllStringSubmatch(string(out), -1) {
		vars[m[1]] = true
	}
	if len(vars) < 20 || !vars["EJ_ZK"] || !vars["EJ_SHUTDOWN_TIMEOUT"] {
		t.Fatalf("cannot read the flags of ejserver serve --help:\n%s", out)
	}
	vars["EJ_API_TOKEN"] = true // an alias: one more admin token
	return vars
}

// checkEnvNames fails for every EJ_ variable that ejserver does not read (a typo there is silently ignored).
func checkEnvNames(t *testing.T, where string, names []string) {
	t.Helper()
	known := serveEnv(t)
	for _, n := range names {
		if strings.HasPrefix(n, "EJ_") && !known[n] {
			t.Errorf("%s: %s is not an ejserver serve variable", where, n)
		}
	}
}

// need returns the path of a tool, or skips the test without it unless EJ_DEPLOY_TOOLS=1 (make test-deploy,
// which installs them) makes a missing tool a failure.
func need(t *testing.T, tool string) string {
	t.Helper()
	path, err := exec.LookPath(tool)
	if err != nil {
		if os.Getenv("EJ_DEPLOY_TOOLS") == "1" {
			t.Fatalf("%s is not installed", tool)
		}
		t.Skipf("%s is not installed (make test-deploy installs it)", tool)
	}
	return path
}

// shutdownTimeout parses EJ_SHUTDOWN_TIMEOUT's value; ejserver's default is 15s.
func shutdownTimeout(t *testing.T, v string) time.Duration {
	t.Helper()
	if v == "" {
		return 15 * time.Second
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		t.Fatalf("EJ_SHUTDOWN_TIMEOUT=%q: %v", v, err)
	}
	return d
}

// drainMargin is what a peer takes after --shutdown-timeout: deleting its job nodes (30 s at most: 100,000
// jobs took ~5.5-16 s on 2 cores), closing the ZooKeeper session and the API's graceful shutdown (5 s each at most).
const drainMargin = 40 * time.Second
