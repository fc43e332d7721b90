// Package harness runs real ejserver processes against real ZooKeeper and records what real HTTP receivers
// get, for the integration tests and the benchmark harness. Every process it starts it stops by PID.
package harness

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// RepoRoot finds the repository root (the directory holding go.mod) above the working directory.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", fmt.Errorf("go.mod not found above the working directory")
		}
		dir = up
	}
}

// Build compiles ./cmd/ejserver into dir and returns the binary's path.
func Build(dir string, race bool) (string, error) {
	return BuildPackage(dir, "./cmd/ejserver", race)
}

// BuildVersion compiles ./cmd/ejserver into dir as ejserver-{version}, with version set as `make build`
// sets it (-X main.version), so that a test can run an older and a newer build side by side.
func BuildVersion(dir, version string) (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "ejserver-"+version)
	cmd := exec.Command("go", "build", "-o", bin, "-ldflags", "-X main.version="+version, "./cmd/ejserver")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build ejserver %s: %v\n%s", version, err, out)
	}
	return bin, nil
}

// BuildPackage compiles the main package pkg (a path relative to the repository root, e.g.
// "./integration/cmd/ejbench") into dir, naming the binary after the package's last element, and returns its
// path.
func BuildPackage(dir, pkg string, race bool) (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, filepath.Base(pkg))
	args := []string{"build", "-o", bin}
	if race {
		args = append(args, "-race")
	}
	args = append(args, pkg)
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build %s: %v\n%s", pkg, err, out)
	}
	return bin, nil
}

// PeerConfig starts one ejserver peer.
type PeerConfig struct {
	Binary         string
	ZK             string
	Namespace      string
	ServerIP       string // e.g. 127.0.0.2; each peer of a test gets its own
	InstanceID     string // default {ServerIP}@-@{pid}
	SessionTimeout time.Duration
	DataDir        string
	ExtraArgs      []string
	Env            []string
	// ClientTLS, when set, is how the harness reaches a peer that serves its API on TLS (--tls-cert): over
	// https, trusting what it says.
	ClientTLS *tls.Config
}

// Peer is a running ejserver process.
type Peer struct {
	Config  PeerConfig
	Addr    string // 127.0.0.1:port of its API
	LogPath string
	cmd     *exec.Cmd
	done    chan struct{}
	exitErr error
	mu      sync.Mutex
	hc      *http.Client
}

// FreePort returns a free TCP port on 127.0.0.1.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// StartPeer starts a peer and waits until its API answers /readyz. The port FreePort found free may be taken
// by another process (a test running in parallel) before the peer binds it: then it tries another port.
func StartPeer(cfg PeerConfig) (*Peer, error) {
	if cfg.SessionTimeout == 0 {
		cfg.SessionTimeout = 4 * time.Second
	}
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return nil, err
	}
	for attempt := 1; ; attempt++ {
		port, err := FreePort()
		if err != nil {
			return nil, err
		}
		p := &Peer{Config: cfg, Addr: fmt.Sprintf("127.0.0.1:%d", port), LogPath: filepath.Join(cfg.DataDir, "ejserver.log")}
		err = p.start()
		if err == nil {
			return p, nil
		}
		if attempt == 3 || !p.Exited() || !strings.Contains(err.Error(), "address already in use") {
			return nil, err
		}
	}
}

func (p *Peer) start() error {
	cfg := p.Config
	args := []string{"serve", "--zk", cfg.ZK, "--namespace", cfg.Namespace, "--listen", p.Addr,
		"--server-ip", cfg.ServerIP, "--session-timeout", cfg.SessionTimeout.String(), "--data-dir", cfg.DataDir,
		"--log-level", "debug", "--shutdown-timeout", "10s"}
	if cfg.InstanceID != "" {
		args = append(args, "--instance-id", cfg.InstanceID)
	}
	args = append(args, cfg.ExtraArgs...)
	logf, err := os.OpenFile(p.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(cfg.Binary, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(os.Environ(), cfg.Env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return err
	}
	p.mu.Lock()
	p.cmd = cmd
	p.done = make(chan struct{})
	done := p.done
	p.mu.Unlock()
	go func() {
		err := cmd.Wait()
		logf.Close()
		p.mu.Lock()
		p.exitErr = err
		p.mu.Unlock()
		close(done)
	}()
	return p.waitReady(60 * time.Second)
}

func (p *Peer) waitReady(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		resp, err := p.HTTPClient().Get(p.URL("/readyz"))
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-p.done:
			return fmt.Errorf("ejserver exited during start-up: %v\n%s", p.exitErr, p.Log())
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("ejserver at %s not ready within %s\n%s", p.Addr, timeout, p.Log())
}

// PID is the process id.
func (p *Peer) PID() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// InstanceID is the peer's instance id ({ip}@-@{pid} unless configured).
func (p *Peer) InstanceID() string {
	if p.Config.InstanceID != "" {
		return p.Config.InstanceID
	}
	return fmt.Sprintf("%s@-@%d", p.Config.ServerIP, p.PID())
}

// Restart starts a stopped peer again, on the same address and data directory.
func (p *Peer) Restart() error { return p.start() }

// Stop sends SIGTERM and waits for the exit (SIGKILL after timeout); it returns the exit error.
func (p *Peer) Stop(timeout time.Duration) error {
	return p.signal(syscall.SIGTERM, timeout)
}

// Kill sends SIGKILL and waits.
func (p *Peer) Kill() {
	_ = p.signal(syscall.SIGKILL, 10*time.Second)
}

// Pause freezes the process (SIGSTOP); Resume thaws it (SIGCONT).
func (p *Peer) Pause() error  { return p.cmd.Process.Signal(syscall.SIGSTOP) }
func (p *Peer) Resume() error { return p.cmd.Process.Signal(syscall.SIGCONT) }

// Exited reports whether the process has ended.
func (p *Peer) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

func (p *Peer) signal(sig syscall.Signal, timeout time.Duration) error {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if cmd == nil {
		return nil
	}
	select {
	case <-done:
	default:
		_ = cmd.Process.Signal(sig)
		select {
		case <-done:
		case <-time.After(timeout):
			_ = cmd.Process.Kill()
			<-done
			return fmt.Errorf("did not exit within %s after %v", timeout, sig)
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exitErr
}

// Log returns the peer's log so far.
func (p *Peer) Log() string {
	b, _ := os.ReadFile(p.LogPath)
	return string(b)
}

// URL returns the peer's API URL for path.
func (p *Peer) URL(path string) string {
	if p.Config.ClientTLS != nil {
		return "https://" + p.Addr + path
	}
	return "http://" + p.Addr + path
}

// HTTPClient is the client that reaches the peer (over TLS with ClientTLS).
func (p *Peer) HTTPClient() *http.Client {
	if p.Config.ClientTLS == nil {
		return http.DefaultClient
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.hc == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.TLSClientConfig = p.Config.ClientTLS.Clone() // HTTP/2 set-up adds to it: never share it
		p.hc = &http.Client{Transport: t}
	}
	return p.hc
}

// Do calls the peer's API with a JSON body (nil for none) and decodes a JSON answer into out (if non-nil).
// It returns the status and the raw body.
func (p *Peer) Do(method, path string, body any, out any, headers ...string) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		if s, ok := body.(string); ok {
			rd = strings.NewReader(s)
		} else {
			b, err := json.Marshal(body)
			if err != nil {
				return 0, nil, err
			}
			rd = bytes.NewReader(b)
		}
	}
	req, err := http.NewRequestWithContext(context.Background(), method, p.URL(path), rd)
	if err != nil {
		return 0, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := p.HTTPClient().Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, nil, err
	}
	if out != nil && len(b) > 0 {
		if err := json.Unmarshal(b, out); err != nil {
			return resp.StatusCode, b, fmt.Errorf("decode %s %s answer: %v: %s", method, path, err, b)
		}
	}
	return resp.StatusCode, b, nil
}

// RSS returns the resident set size of a process in bytes (Linux /proc).
func RSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/statm", pid))
	if err != nil {
		return 0, err
	}
	var size, rss int64
	if _, err := fmt.Sscan(string(b), &size, &rss); err != nil {
		return 0, err
	}
	return rss * int64(os.Getpagesize()), nil
}

// CPUTime returns the user+system CPU time a process has used (Linux /proc).
func CPUTime(pid int) (time.Duration, error) {
	st, err := readStat(pid)
	if err != nil {
		return 0, err
	}
	return st.own, nil
}

// TreeCPUTime returns the user+system CPU time a process and its children have used: its own, that of its
// children it has waited for, and that of those alive (Linux /proc). A server of many processes (PostgreSQL's
// postmaster and its backends) is measured from its first process: a child's time counts while it lives and,
// once reaped, in its parent's.
func TreeCPUTime(pid int) (time.Duration, error) {
	st, err := readStat(pid)
	if err != nil {
		return 0, err
	}
	total := st.own + st.reaped
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	for _, p := range procs {
		child, err := strconv.Atoi(p.Name())
		if err != nil || child == pid {
			continue
		}
		if cs, err := readStat(child); err == nil && cs.ppid == pid {
			total += cs.own
		}
	}
	return total, nil
}

// procStat is what /proc/{pid}/stat tells of a process's CPU time.
type procStat struct {
	ppid        int
	own, reaped time.Duration // user+system: its own, and its waited-for children's
}

func readStat(pid int) (procStat, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procStat{}, err
	}
	return parseStat(string(b))
}

// parseStat reads a /proc/{pid}/stat line (proc(5)): after the command's closing parenthesis, the fields from
// the state (3rd) on; ppid is the 4th, utime, stime, cutime and cstime the 14th to 17th, in clock ticks.
func parseStat(s string) (procStat, error) {
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 > len(s) {
		return procStat{}, fmt.Errorf("stat: no command in %q", s)
	}
	f := strings.Fields(s[i+2:])
	if len(f) < 15 {
		return procStat{}, fmt.Errorf("stat: %d fields after the command, want 15 or more", len(f))
	}
	var n [5]int64
	for k, idx := range [5]int{1, 11, 12, 13, 14} {
		v, err := strconv.ParseInt(f[idx], 10, 64)
		if err != nil {
			return procStat{}, fmt.Errorf("stat: field %d: %w", idx+3, err)
		}
		n[k] = v
	}
	const clkTck = 100 // USER_HZ on Linux
	tick := func(t int64) time.Duration { return time.Duration(t) * time.Second / clkTck }
	return procStat{ppid: int(n[0]), own: tick(n[1] + n[2]), reaped: tick(n[3] + n[4])}, nil
}
