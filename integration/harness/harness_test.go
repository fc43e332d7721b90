package harness

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

func TestParseStat(t *testing.T) {
	// a command may hold spaces and parentheses: the fields start after the last ')'
	line := "4242 (post (gres) x) S 17 4242 4242 0 -1 4194560 100 0 0 0 250 130 45 5 20 0 1 0 100 1000 10\n"
	st, err := parseStat(line)
	if err != nil {
		t.Fatal(err)
	}
	want := procStat{ppid: 17, own: 3800 * time.Millisecond, reaped: 500 * time.Millisecond}
	if st != want {
		t.Errorf("parseStat = %+v, want %+v", st, want)
	}
	for _, bad := range []string{"", "4242 (x", "4242 (x) S 1 2", "4242 (x) S 17 4242 4242 0 -1 4194560 100 0 0 0 u 130 45 5 20"} {
		if _, err := parseStat(bad); err == nil {
			t.Errorf("parseStat(%q): no error", bad)
		}
	}
}

// A child's CPU counts in its parent's tree while it lives and after it is reaped; not in the parent's own.
func TestTreeCPUTimeCountsChildren(t *testing.T) {
	busy := "i=0; while [ $i -lt 400000 ]; do i=$((i+1)); done"
	child := exec.Command("sh", "-c", busy+"; exec sleep 30")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = child.Process.Kill(); _ = child.Wait() }()
	var burnt time.Duration
	for deadline := time.Now().Add(20 * time.Second); burnt < 200*time.Millisecond; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the child used %v of CPU in 20 s", burnt)
		}
		var err error
		if burnt, err = CPUTime(child.Process.Pid); err != nil {
			t.Fatal(err)
		}
	}
	own, _ := CPUTime(os.Getpid())
	alive, err := TreeCPUTime(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if alive < own+burnt {
		t.Errorf("tree %v with a live child, want at least own %v + child's %v", alive, own, burnt)
	}
	_ = child.Process.Kill()
	_ = child.Wait() // reaped: its time moves into this process's children's
	own, _ = CPUTime(os.Getpid())
	reaped, err := TreeCPUTime(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if reaped < own+burnt {
		t.Errorf("tree %v with the child reaped, want at least own %v + child's %v", reaped, own, burnt)
	}
}
