//go:build image

// The container image, run for real with podman: `make test-image` builds it and runs this file's test
// (go test -tags image), with EJ_IMAGE naming the image. It is left out of `make test`: it needs podman,
// buildah and runc, and building the image takes minutes.

package integration

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	_ "time/tzdata"

	"github.com/ejserver/ejserver/integration/harness"
	"github.com/ejserver/ejserver/internal/testutil/zktest"
)

// podman runs podman with the runtime this machine needs (crun fails on its cgroup mode).
func podman(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("podman", append([]string{"--runtime", "runc"}, args...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return strings.TrimSpace(out.String()), err
}

func mustPodman(t *testing.T, args ...string) string {
	t.Helper()
	out, err := podman(t, args...)
	if err != nil {
		t.Fatalf("podman %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// limits are --ulimit values at or below this shell's own, which podman must be given explicitly here.
func limits(t *testing.T) []string {
	var args []string
	for _, l := range []struct {
		name string
		res  int
		want uint64
	}{{"nofile", syscall.RLIMIT_NOFILE, 4096}, {"nproc", 6 /* RLIMIT_NPROC */, 4096}} {
		var r syscall.Rlimit
		if err := syscall.Getrlimit(l.res, &r); err != nil {
			t.Fatal(err)
		}
		v := min(l.want, r.Cur)
		args = append(args, "--ulimit", fmt.Sprintf("%s=%d:%d", l.name, v, v))
	}
	return args
}

// The image runs a peer as a non-root user against a real ZooKeeper and a real receiver: webhooks arrive,
// a job in Asia/Shanghai fires at its wall-clock time (the zones come from the binary: the image has no
// zoneinfo), `ejserver healthcheck` inside the container tells health by its exit code, and SIGTERM
// (podman stop) drains the peer and exits 0.
func TestImage(t *testing.T) {
	image := os.Getenv("EJ_IMAGE")
	if image == "" {
		t.Skip("EJ_IMAGE is not set: make test-image builds the image and sets it")
	}
	inspect := mustPodman(t, "image", "inspect", "--format",
		`{{.User}}|{{index .Labels "org.opencontainers.image.revision"}}|{{index .Labels "org.opencontainers.image.version"}}|{{.Size}}`, image)
	parts := strings.Split(inspect, "|")
	if len(parts) != 4 || parts[0] != "65532:65532" || len(parts[1]) != 40 || parts[2] == "" {
		t.Fatalf("image user and OCI labels: %q", inspect)
	}
	size, _ := strconv.ParseInt(parts[3], 10, 64)
	t.Logf("image %s: user %s, revision %s, version %s, %.1f MB", image, parts[0], parts[1], parts[2], float64(size)/1e6)
	if size > 60e6 {
		t.Errorf("the image is %d bytes: more than the binary, CA roots and a user?", size)
	}

	recv := newReceiver(t)
	port, err := harness.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	listen := fmt.Sprintf("127.0.0.1:%d", port)
	ns := zktest.Namespace("image")
	const token = "image-test-admin-token-0123456789"
	name := fmt.Sprintf("ejserver-image-test-%d", os.Getpid())
	args := append([]string{"run", "-d", "--name", name, "--network", "host"}, limits(t)...)
	args = append(args, "-e", "EJ_ZK="+zktest.Addr(t), "-e", "EJ_NAMESPACE="+ns, "-e", "EJ_LISTEN="+listen,
		"-e", "EJ_SERVER_IP=127.0.0.1", "-e", "EJ_API_TOKEN="+token, "-e", "EJ_SESSION_TIMEOUT=4s",
		"-e", "EJ_SHUTDOWN_TIMEOUT=10s", "-e", "EJ_LOG_FORMAT=text", image)
	mustPodman(t, args...)
	t.Cleanup(func() {
		if t.Failed() {
			logs, _ := podman(t, "logs", name)
			t.Logf("---- container log ----\n%s", logs)
		}
		_, _ = podman(t, "rm", "-f", "-t", "0", name)
	})
	p := &harness.Peer{Addr: listen}
	auth := []string{"Authorization", "Bearer " + token}
	deadline := time.Now().Add(60 * time.Second)
	for {
		status, _, err := p.Do("GET", "/readyz", nil, nil)
		if err == nil && status == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the container's peer is not ready: %v %d", err, status)
		}
		time.Sleep(200 * time.Millisecond)
	}

	// non-root: the container's main process, seen from the host
	pid := mustPodman(t, "inspect", "--format", "{{.State.Pid}}", name)
	status, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if strings.HasPrefix(line, "Uid:") {
			if f := strings.Fields(line); len(f) < 2 || f[1] != "65532" {
				t.Fatalf("the peer runs as %q, want uid 65532", line)
			}
			t.Logf("the peer (host pid %s) runs as %s", pid, strings.Join(strings.Fields(line)[1:], " "))
		}
	}
	// the health check inside the image: exit 0 now
	if out, err := podman(t, "exec", name, "/usr/local/bin/ejserver", "healthcheck"); err != nil {
		t.Fatalf("healthcheck in the container: %v: %s", err, out)
	}
	if out, err := podman(t, "exec", name, "/usr/local/bin/ejserver", "healthcheck", "--url", "http://127.0.0.1:1/healthz"); err == nil {
		t.Fatalf("healthcheck of nothing passed: %s", out)
	}

	// webhooks arrive
	mustDo(t, p, "POST", "/api/v1/jobs", job("img-every", "* * * * * ?", 2, recv.URL), http.StatusCreated, nil, auth...)
	if _, ok := recv.WaitFor(30*time.Second, func(ds []harness.Delivery) bool { return completeFires(filter(ds, "img-every"), 2) >= 2 }); !ok {
		t.Fatal("no webhooks from the container")
	}

	// Asia/Shanghai (UTC+8): a job at a wall-clock second there fires at that instant; with UTC instead of
	// the zone it would fire 8 hours off
	shanghai, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now().Add(8 * time.Second).In(shanghai).Truncate(time.Second)
	spec := job("img-shanghai", fmt.Sprintf("%d %d %d %d %d ? %d", at.Second(), at.Minute(), at.Hour(), at.Day(), int(at.Month()), at.Year()), 1, recv.URL)
	spec["timeZone"] = "Asia/Shanghai"
	mustDo(t, p, "POST", "/api/v1/jobs", spec, http.StatusCreated, nil, auth...)
	ds, ok := recv.WaitFor(30*time.Second, func(ds []harness.Delivery) bool { return len(filter(ds, "img-shanghai")) > 0 })
	if !ok {
		t.Fatalf("the Asia/Shanghai job set for %s did not fire", at)
	}
	d := filter(ds, "img-shanghai")[0]
	if !d.Payload.ScheduledAt.Equal(at) || d.ArrivedAt.Sub(at) > 5*time.Second || d.ArrivedAt.Before(at.Add(-time.Second)) {
		t.Fatalf("the Asia/Shanghai job: scheduled %s, arrived %s; want %s (%s UTC)", d.Payload.ScheduledAt, d.ArrivedAt, at, at.UTC())
	}
	t.Logf("Asia/Shanghai job: %s local = %s UTC, arrived %s after", at.Format(time.DateTime), at.UTC().Format(time.TimeOnly),
		d.ArrivedAt.Sub(at).Round(time.Millisecond))

	// SIGTERM drains and exits 0
	stopped := time.Now()
	mustPodman(t, "stop", "-t", "30", name)
	code := mustPodman(t, "inspect", "--format", "{{.State.ExitCode}}", name)
	logs, _ := podman(t, "logs", name)
	if code != "0" || !strings.Contains(logs, "ejserver stopped") || !strings.Contains(logs, "shutting down") {
		t.Fatalf("podman stop: exit code %s\n%s", code, logs)
	}
	t.Logf("podman stop (SIGTERM): drained and exited 0 in %s", time.Since(stopped).Round(time.Millisecond))
}

// A Docker-format image keeps the HEALTHCHECK (OCI images have no such field): podman runs it, and it is
// `ejserver healthcheck`, healthy while the peer answers.
func TestImageDockerFormatHealthcheck(t *testing.T) {
	image := os.Getenv("EJ_IMAGE_DOCKER")
	if image == "" {
		t.Skip("EJ_IMAGE_DOCKER is not set: make test-image builds the Docker-format image and sets it")
	}
	if hc := mustPodman(t, "image", "inspect", "--format", "{{json .HealthCheck}}", image); !strings.Contains(hc, `"/usr/local/bin/ejserver","healthcheck"`) {
		t.Fatalf("the image's health check is %s", hc)
	}
	port, err := harness.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	listen := fmt.Sprintf("127.0.0.1:%d", port)
	name := fmt.Sprintf("ejserver-image-hc-%d", os.Getpid())
	args := append([]string{"run", "-d", "--name", name, "--network", "host"}, limits(t)...)
	mustPodman(t, append(args, "-e", "EJ_ZK="+zktest.Addr(t), "-e", "EJ_NAMESPACE="+zktest.Namespace("imagehc"),
		"-e", "EJ_LISTEN="+listen, "-e", "EJ_SERVER_IP=127.0.0.1", image)...)
	t.Cleanup(func() { _, _ = podman(t, "rm", "-f", "-t", "0", name) })
	p := &harness.Peer{Addr: listen}
	deadline := time.Now().Add(60 * time.Second)
	for {
		if status, _, err := p.Do("GET", "/readyz", nil, nil); err == nil && status == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			logs, _ := podman(t, "logs", name)
			t.Fatalf("the container's peer is not ready:\n%s", logs)
		}
		time.Sleep(200 * time.Millisecond)
	}
	// podman schedules health checks with systemd timers, which this machine lacks: run one by hand
	if out, err := podman(t, "healthcheck", "run", name); err != nil {
		t.Fatalf("podman healthcheck run: %v\n%s", err, out)
	}
	if health := mustPodman(t, "inspect", "--format", "{{.State.Health.Status}}", name); health != "healthy" {
		t.Fatalf("health %q after a passing check", health)
	}
	t.Log("podman healthcheck run: healthy")
}
