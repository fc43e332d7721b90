// Package zktest starts throwaway ZooKeeper servers (Debian's zookeeper package, run as a plain process) for
// tests: one standalone server shared by a package's tests, each test in its own namespace, or a 3-node
// ensemble for fault tests. It never skips: without ZooKeeper installed it fails, saying `make test`
// installs it. EJ_TEST_ZK=host:port points the tests at a running server instead.
package zktest

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// Classpath of Debian's zookeeper package. zookeeper.jar's manifest names most of Netty but not
// netty-codec.jar (SslHandler's parent class, ByteToMessageDecoder, lives there) nor netty-resolver.jar, so a
// server with a secureClientPort (the Netty connection factory with TLS) needs them added.
const Classpath = "/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-simple.jar:" +
	"/usr/share/java/netty-codec.jar:/usr/share/java/netty-resolver.jar"

// Server is one ZooKeeper process started by this package.
type Server struct {
	Addr string // 127.0.0.1:port (the secure client port of a TLS server)
	Dir  string
	// TLS is the client side of a TLS-only server (StartTLS), used to see that it serves.
	TLS  *tls.Config
	cmd  *exec.Cmd
	cfg  string
	mu   sync.Mutex
	done chan struct{}
}

// Ensemble is three ZooKeeper processes forming one quorum on loopback.
type Ensemble struct {
	Nodes []*Server
}

// Connect is the ensemble's connect string.
func (e *Ensemble) Connect() string {
	var out []string
	for _, n := range e.Nodes {
		out = append(out, n.Addr)
	}
	return strings.Join(out, ",")
}

// Stop ends every node.
func (e *Ensemble) Stop() {
	for _, n := range e.Nodes {
		n.Stop()
	}
}

var nsCounter atomic.Int64

// Namespace returns a namespace unique to this test run.
func Namespace(prefix string) string {
	return fmt.Sprintf("%s-%d-%d", prefix, os.Getpid(), nsCounter.Add(1))
}

// CheckInstalled fails unless Debian's zookeeper package is present.
func CheckInstalled() error {
	if _, err := os.Stat("/usr/share/java/zookeeper.jar"); err != nil {
		return fmt.Errorf("ZooKeeper is not installed (/usr/share/java/zookeeper.jar missing): run `make test`, which installs Debian's zookeeper package")
	}
	if _, err := exec.LookPath("java"); err != nil {
		return fmt.Errorf("java is not installed: run `make test`")
	}
	return nil
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func config(dir string, port int, extra string) string {
	return fmt.Sprintf(`tickTime=500
initLimit=10
syncLimit=5
minSessionTimeout=1000
maxSessionTimeout=60000
dataDir=%s/data
clientPort=%d
clientPortAddress=127.0.0.1
admin.enableServer=false
4lw.commands.whitelist=*
extendedTypesEnabled=true
maxClientCnxns=0
%s`, dir, port, extra)
}

// StartStandalone starts one ZooKeeper in dir (created if needed) and waits until it serves.
func StartStandalone(dir string) (*Server, error) {
	if err := CheckInstalled(); err != nil {
		return nil, err
	}
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	s := &Server{Addr: fmt.Sprintf("127.0.0.1:%d", port), Dir: dir, cfg: config(dir, port, "")}
	if err := s.Start(); err != nil {
		return nil, err
	}
	return s, nil
}

// TLSFiles are the PEM files of a TLS-only server: KeyStore holds its private key and certificate (chain),
// TrustStore the CAs its clients' certificates must chain to.
type TLSFiles struct {
	KeyStore, TrustStore string
	// ClientAuth is ssl.clientAuth: "need" (default), "want" or "none".
	ClientAuth string
}

// StartTLS starts one ZooKeeper that serves TLS only: a secureClientPort through the Netty connection factory
// with PEM key and trust stores, and no plaintext client port at all. client is the TLS config the test's
// clients use (it must trust the server's certificate), used here to see that it serves.
func StartTLS(dir string, files TLSFiles, client *tls.Config) (*Server, error) {
	if err := CheckInstalled(); err != nil {
		return nil, err
	}
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	auth := files.ClientAuth
	if auth == "" {
		auth = "need"
	}
	cfg := fmt.Sprintf(`tickTime=500
initLimit=10
syncLimit=5
minSessionTimeout=1000
maxSessionTimeout=60000
dataDir=%s/data
secureClientPort=%d
secureClientPortAddress=127.0.0.1
serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory
ssl.keyStore.location=%s
ssl.keyStore.type=PEM
ssl.trustStore.location=%s
ssl.trustStore.type=PEM
ssl.clientAuth=%s
admin.enableServer=false
4lw.commands.whitelist=*
extendedTypesEnabled=true
maxClientCnxns=0
`, dir, port, files.KeyStore, files.TrustStore, auth)
	s := &Server{Addr: fmt.Sprintf("127.0.0.1:%d", port), Dir: dir, cfg: cfg, TLS: client}
	if err := s.Start(); err != nil {
		return nil, err
	}
	return s, nil
}

// StartEnsemble starts three nodes under dir and waits until each serves. Its nine ports were free a moment
// before the nodes bind them: when another process (a test running in parallel) took one first, it starts
// the ensemble again on new ports.
func StartEnsemble(dir string) (*Ensemble, error) {
	for attempt := 1; ; attempt++ {
		e, err := startEnsemble(filepath.Join(dir, fmt.Sprintf("try%d", attempt)))
		if err == nil || attempt == 3 || !strings.Contains(err.Error(), "Address already in use") {
			return e, err
		}
	}
}

func startEnsemble(dir string) (*Ensemble, error) {
	if err := CheckInstalled(); err != nil {
		return nil, err
	}
	var ports [9]int
	for i := range ports {
		p, err := FreePort()
		if err != nil {
			return nil, err
		}
		ports[i] = p
	}
	var servers strings.Builder
	for i := range 3 {
		fmt.Fprintf(&servers, "server.%d=127.0.0.1:%d:%d\n", i+1, ports[3+i], ports[6+i])
	}
	e := &Ensemble{}
	for i := range 3 {
		nd := filepath.Join(dir, fmt.Sprintf("n%d", i+1))
		if err := os.MkdirAll(filepath.Join(nd, "data"), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(nd, "data", "myid"), []byte(fmt.Sprint(i+1)), 0o644); err != nil {
			return nil, err
		}
		e.Nodes = append(e.Nodes, &Server{Addr: fmt.Sprintf("127.0.0.1:%d", ports[i]), Dir: nd,
			cfg: config(nd, ports[i], servers.String())})
	}
	for _, n := range e.Nodes {
		if err := n.launch(); err != nil {
			e.Stop()
			return nil, err
		}
	}
	for _, n := range e.Nodes {
		if err := n.wait(90 * time.Second); err != nil {
			e.Stop()
			return nil, err
		}
	}
	return e, nil
}

// Start (re)starts a stopped server with its data and port.
func (s *Server) Start() error {
	if err := s.launch(); err != nil {
		return err
	}
	return s.wait(60 * time.Second)
}

func (s *Server) launch() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := os.MkdirAll(filepath.Join(s.Dir, "data"), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(s.Dir, "zoo.cfg"), []byte(s.cfg), 0o644); err != nil {
		return err
	}
	logf, err := os.OpenFile(filepath.Join(s.Dir, "zk.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	heap := os.Getenv("EJ_ZK_HEAP")
	if heap == "" {
		heap = "256m"
	}
	// EJ_ZK_JVMFLAGS: more JVM flags, space-separated (a benchmark's GC log: -Xlog:gc:file=...)
	args := append([]string{"-Xms64m", "-Xmx" + heap}, strings.Fields(os.Getenv("EJ_ZK_JVMFLAGS"))...)
	args = append(args, "-cp", Classpath, "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
		"-Dznode.container.checkIntervalMs=1000", "org.apache.zookeeper.server.quorum.QuorumPeerMain",
		filepath.Join(s.Dir, "zoo.cfg"))
	cmd := exec.Command("java", args...)
	cmd.Dir = s.Dir
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // never outlive the test binary
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("start ZooKeeper: %w", err)
	}
	s.cmd = cmd
	s.done = make(chan struct{})
	go func(done chan struct{}) { _ = cmd.Wait(); logf.Close(); close(done) }(s.done)
	return nil
}

func (s *Server) wait(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if mode := s.mode(); mode != "" {
			return nil
		}
		select {
		case <-s.done:
			log, _ := os.ReadFile(filepath.Join(s.Dir, "zk.log"))
			return fmt.Errorf("ZooKeeper exited during start-up:\n%s", log)
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("ZooKeeper at %s did not start within %s", s.Addr, timeout)
}

// Stop ends the server by PID (SIGTERM, then SIGKILL after 5 s) and waits for it.
func (s *Server) Stop() {
	s.signal(syscall.SIGTERM, 5*time.Second)
}

// Kill ends the server with SIGKILL.
func (s *Server) Kill() {
	s.signal(syscall.SIGKILL, 5*time.Second)
}

func (s *Server) signal(sig syscall.Signal, grace time.Duration) {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(sig)
	select {
	case <-done:
	case <-time.After(grace):
		_ = cmd.Process.Kill()
		<-done
	}
}

// FourLetter sends a ZooKeeper four-letter command and returns the answer.
func FourLetter(addr, cmd string) (string, error) {
	return fourLetter(addr, cmd, nil)
}

// mode is Mode over TLS for a TLS-only server.
func (s *Server) mode() string {
	out, err := fourLetter(s.Addr, "srvr", s.TLS)
	if err != nil {
		return ""
	}
	return modeOf(out)
}

func fourLetter(addr, cmd string, tc *tls.Config) (string, error) {
	var (
		c   net.Conn
		err error
	)
	if tc != nil {
		c, err = tls.DialWithDialer(&net.Dialer{Timeout: 2 * time.Second}, "tcp", addr, tc)
	} else {
		c, err = net.DialTimeout("tcp", addr, 2*time.Second)
	}
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(3 * time.Second))
	if _, err := c.Write([]byte(cmd)); err != nil {
		return "", err
	}
	var b strings.Builder
	sc := bufio.NewScanner(c)
	for sc.Scan() {
		b.WriteString(sc.Text())
		b.WriteByte('\n')
	}
	return b.String(), nil
}

// Mode returns "standalone", "leader" or "follower" when the server serves, else "".
func Mode(addr string) string {
	out, err := FourLetter(addr, "srvr")
	if err != nil {
		return ""
	}
	return modeOf(out)
}

func modeOf(out string) string {
	for _, line := range strings.Split(out, "\n") {
		if m, ok := strings.CutPrefix(line, "Mode: "); ok {
			return strings.TrimSpace(m)
		}
	}
	return ""
}

var (
	sharedOnce sync.Once
	shared     *Server
	sharedAddr string
	sharedErr  error
)

// Shared returns the address of a ZooKeeper for the whole test binary: EJ_TEST_ZK if set, else a standalone
// server started on first use. Call StopShared from TestMain after m.Run.
func Shared() (string, error) {
	sharedOnce.Do(func() {
		if addr := os.Getenv("EJ_TEST_ZK"); addr != "" {
			sharedAddr = addr
			return
		}
		dir, err := os.MkdirTemp("", "ejzk-")
		if err != nil {
			sharedErr = err
			return
		}
		shared, sharedErr = StartStandalone(dir)
		if sharedErr == nil {
			sharedAddr = shared.Addr
		}
	})
	return sharedAddr, sharedErr
}

// StopShared stops the server Shared started, if any, and removes its data.
func StopShared() {
	if shared != nil {
		shared.Stop()
		_ = os.RemoveAll(shared.Dir)
	}
}

// Addr returns the shared server's address or fails the test.
func Addr(t testing.TB) string {
	t.Helper()
	addr, err := Shared()
	if err != nil {
		t.Fatalf("ZooKeeper for tests: %v", err)
	}
	return addr
}

// Main is the TestMain of a package whose tests need ZooKeeper: it starts (or finds) the shared server, runs
// the tests, stops the server, and then fails the run if goroutines leaked. Use it as
//
//	func TestMain(m *testing.M) { os.Exit(zktest.Main(m)) }
func Main(m *testing.M) int {
	if _, err := Shared(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	code := m.Run()
	StopShared()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goroutine leak:", err)
			code = 1
		}
	}
	return code
}
