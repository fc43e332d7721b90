package deploy

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

const unitFile = "systemd/ejserver.service"

// securityThreshold is the highest exposure `systemd-analyze security` may rate the unit: 0 is the most
// locked down, 10 the least; below 2 systemd calls it "OK" (the unit scores 1.3 on systemd 252).
const securityThreshold = 2.0

// unit reads a unit file into its settings, by key, in order.
func unit(t *testing.T, path string) map[string][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	settings := map[string][]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";") || strings.HasPrefix(line, "[") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			t.Fatalf("%s: %q is not KEY=VALUE", path, line)
		}
		settings[k] = append(settings[k], v)
	}
	return settings
}

// TimeoutStopSec leaves the peer time to drain: systemd's SIGKILL comes only after --shutdown-timeout and
// the session and API close. Checked statically: PID 1 here is not systemd.
func TestSystemdUnitStopIsAGracefulDrain(t *testing.T) {
	u := unit(t, unitFile)
	env := map[string]string{}
	for _, line := range u["Environment"] {
		for _, kv := range strings.Fields(line) {
			k, v, _ := strings.Cut(kv, "=")
			env[k] = v
		}
	}
	names := []string{}
	for k := range env {
		names = append(names, k)
	}
	for _, line := range strings.Split(string(must(os.ReadFile("systemd/ejserver.env"))), "\n") {
		line = strings.TrimPrefix(strings.TrimSpace(line), "#")
		if k, _, ok := strings.Cut(line, "="); ok && strings.HasPrefix(k, "EJ_") {
			names = append(names, k)
		}
	}
	checkEnvNames(t, "ejserver.service/ejserver.env", names)

	stop, err := time.ParseDuration(last(u["TimeoutStopSec"]))
	if err != nil {
		t.Fatalf("TimeoutStopSec: %v", err)
	}
	drain := shutdownTimeout(t, env["EJ_SHUTDOWN_TIMEOUT"])
	if stop <= drain+drainMargin {
		t.Errorf("TimeoutStopSec %s: systemd kills the peer before --shutdown-timeout %s + %s", stop, drain, drainMargin)
	}
	if s := last(u["KillSignal"]); s != "" && s != "SIGTERM" {
		t.Errorf("KillSignal %s: ejserver drains on SIGTERM", s)
	}
	if last(u["DynamicUser"]) != "yes" && last(u["User"]) == "" {
		t.Error("the unit runs as root")
	}
	for _, k := range []string{"NoNewPrivileges", "ProtectSystem", "ProtectHome", "PrivateTmp", "PrivateDevices"} {
		if len(u[k]) == 0 {
			t.Errorf("%s is not set", k)
		}
	}
	t.Logf("TimeoutStopSec %s > shutdown timeout %s + %s", stop, drain, drainMargin)
}

// systemd-analyze verifies the unit with the real binary at its ExecStart path (inside a root of its own:
// verify fails on a missing binary), and rates its exposure at or below securityThreshold.
func TestSystemdAnalyze(t *testing.T) {
	analyze := need(t, "systemd-analyze")
	root := t.TempDir()
	u := unit(t, unitFile)
	exe := strings.Fields(last(u["ExecStart"]))[0]
	if exe != "/usr/local/bin/ejserver" {
		t.Fatalf("ExecStart runs %s", exe)
	}
	for _, dir := range []string{filepath.Dir(exe), "etc/systemd/system", "usr/lib/systemd"} {
		if err := os.MkdirAll(filepath.Join(root, dir), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// the targets the unit orders itself after, from this machine's systemd
	if out, err := exec.Command("cp", "-a", "/usr/lib/systemd/system", filepath.Join(root, "usr/lib/systemd/")).CombinedOutput(); err != nil {
		t.Fatalf("copy systemd's units: %v %s", err, out)
	}
	if out, err := exec.Command("cp", binary, filepath.Join(root, exe)).CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	if out, err := exec.Command("cp", unitFile, filepath.Join(root, "etc/systemd/system/")).CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	verify := func() (string, error) {
		out, err := exec.Command(analyze, "verify", "--root="+root, "ejserver.service").CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	// any message is a finding: verify exits 0 on an unknown setting or value and only says so
	if out, err := verify(); err != nil || out != "" {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
	// and it does look at the binary
	if err := os.Rename(filepath.Join(root, exe), filepath.Join(root, exe+".away")); err != nil {
		t.Fatal(err)
	}
	if out, err := verify(); err == nil || !strings.Contains(out, "not executable") {
		t.Errorf("systemd-analyze verify passed without the binary: %v %s", err, out)
	}
	if err := os.Rename(filepath.Join(root, exe+".away"), filepath.Join(root, exe)); err != nil {
		t.Fatal(err)
	}

	out, err := exec.Command(analyze, "security", "--offline=yes", "--root="+root,
		"--threshold="+strconv.Itoa(int(securityThreshold*10)), "ejserver.service").CombinedOutput()
	m := regexp.MustCompile(`Overall exposure level for ejserver.service: ([0-9.]+) (\S+)`).FindStringSubmatch(string(out))
	if m == nil {
		t.Fatalf("systemd-analyze security: %v\n%s", err, out)
	}
	score, _ := strconv.ParseFloat(m[1], 64)
	t.Logf("systemd-analyze security --offline=yes: exposure %.1f %s (threshold %.1f)", score, m[2], securityThreshold)
	if score > securityThreshold || err != nil {
		t.Errorf("exposure %.1f %s is above %.1f: %v\n%s", score, m[2], securityThreshold, err, out)
	}
}

func last(vs []string) string {
	if len(vs) == 0 {
		return ""
	}
	return vs[len(vs)-1]
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
