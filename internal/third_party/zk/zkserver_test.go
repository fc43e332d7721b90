package zk

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// The fork is a module of its own (ejserver's go.mod replaces go-zookeeper with it), so its tests cannot use
// ejserver's internal/testutil/zktest: they start their own ZooKeeper the same way (Debian's package), or use
// the one EJ_TEST_ZK names.

const classpath = "/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-simple.jar"

var serverAddr string

func testServer(t *testing.T) string {
	t.Helper()
	if serverAddr == "" {
		t.Fatal("no ZooKeeper for the tests")
	}
	return serverAddr
}

func testMain(m *testing.M) int {
	if serverAddr = os.Getenv("EJ_TEST_ZK"); serverAddr != "" {
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "zkfork-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	stop, addr, err := startZooKeeper(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "ZooKeeper for tests:", err)
		return 1
	}
	defer stop()
	serverAddr = addr
	return m.Run()
}

// startZooKeeper starts a standalone server in dir on a free loopback port and waits until it serves.
func startZooKeeper(dir string) (stop func(), addr string, err error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cfg := fmt.Sprintf("tickTime=500\ndataDir=%s/data\nclientPort=%d\nclientPortAddress=127.0.0.1\n"+
		"admin.enableServer=false\n4lw.commands.whitelist=*\nminSessionTimeout=1000\nmaxSessionTimeout=60000\n", dir, port)
	if err := os.WriteFile(filepath.Join(dir, "zoo.cfg"), []byte(cfg), 0o644); err != nil {
		return nil, "", err
	}
	logf, err := os.Create(filepath.Join(dir, "zk.log"))
	if err != nil {
		return nil, "", err
	}
	cmd := exec.Command("java", "-Xmx256m", "-cp", classpath, "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
		"org.apache.zookeeper.server.quorum.QuorumPeerMain", filepath.Join(dir, "zoo.cfg"))
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, "", err
	}
	stop = func() { _ = cmd.Process.Kill(); _ = cmd.Wait(); logf.Close() }
	addr = fmt.Sprintf("127.0.0.1:%d", port)
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); {
		if out := FLWRuok([]string{addr}, time.Second); len(out) == 1 && out[0] {
			return stop, addr, nil
		}
		time.Sleep(100 * time.Millisecond) // polling the server's start with a deadline
	}
	stop()
	return nil, "", fmt.Errorf("ZooKeeper at %s did not start within 60 s", addr)
}

// namespace is a root node name of its own for a test (prefix, the process and a counter).
func namespace(prefix string) string {
	return fmt.Sprintf("%s-%d-%d", prefix, os.Getpid(), namespaces.Add(1))
}

var namespaces atomic.Int64
