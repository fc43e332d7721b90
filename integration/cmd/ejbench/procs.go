package main

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ejserver/ejserver/integration/harness"
	"github.com/ejserver/ejserver/internal/testutil/zktest"
)

// usage measures processes over a window: CPU time used (from /proc/{pid}/stat) and the highest RSS seen
// (sampled twice a second; over the whole window, its first minute and its last), plus the whole machine's
// busy share (/proc/stat).
type usage struct {
	// pidsOf names the processes now (a restarted peer's new process replaces its old one at the same index)
	pidsOf func() []int
	host0  hostCPU
	start  time.Time
	mu     sync.Mutex
	pids   []int
	// cpuBase is each current process's CPU time at the window's start (0 for a process started since),
	// cpuLast its latest reading, cpuGone what the processes it replaced used in the window
	cpuBase, cpuLast, cpuGone []time.Duration
	samples                   []rssSample // every sample: the window's highest RSS, and its first and last minute's
	stop                      chan struct{}
	finished                  chan struct{}
}

// rssSample is every process's RSS at one time.
type rssSample struct {
	at  time.Time
	rss []int64
}

func startUsage(pids []int) *usage { return startUsageOf(func() []int { return pids }) }

// startUsageOf measures the processes pidsOf names at each sample: when one is replaced (a peer restarted),
// its CPU until its last sample and its successor's since its start both count.
func startUsageOf(pidsOf func() []int) *usage {
	pids := pidsOf()
	n := len(pids)
	u := &usage{pidsOf: pidsOf, pids: slices.Clone(pids), cpuBase: make([]time.Duration, n), cpuLast: make([]time.Duration, n),
		cpuGone: make([]time.Duration, n),
		stop:    make(chan struct{}), finished: make(chan struct{}), host0: readHostCPU(), start: time.Now()}
	for i, pid := range pids {
		u.cpuBase[i], _ = harness.CPUTime(pid)
		u.cpuLast[i] = u.cpuBase[i]
	}
	u.sample()
	go func() {
		defer close(u.finished)
		t := time.NewTicker(500 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-u.stop:
				return
			case <-t.C:
				u.sample()
			}
		}
	}()
	return u
}

func (u *usage) sample() {
	u.mu.Lock()
	defer u.mu.Unlock()
	now := u.pidsOf()
	x := rssSample{at: time.Now(), rss: make([]int64, len(u.pids))}
	for i := range u.pids {
		if i < len(now) && now[i] != u.pids[i] {
			u.cpuGone[i] += u.cpuLast[i] - u.cpuBase[i]
			u.pids[i], u.cpuBase[i], u.cpuLast[i] = now[i], 0, 0
		}
		if c, err := harness.CPUTime(u.pids[i]); err == nil {
			u.cpuLast[i] = c
		}
		if rss, err := harness.RSS(u.pids[i]); err == nil {
			x.rss[i] = rss
		}
	}
	u.samples = append(u.samples, x)
}

// maxRSSBetween is each process's highest RSS sampled in [from, to), in MB.
func maxRSSBetween(samples []rssSample, n int, from, to time.Time) []float64 {
	top := make([]int64, n)
	for _, x := range samples {
		if !x.at.Before(from) && x.at.Before(to) {
			for i := range min(n, len(x.rss)) {
				top[i] = max(top[i], x.rss[i])
			}
		}
	}
	out := make([]float64, n)
	for i, r := range top {
		out[i] = round1(float64(r) / (1 << 20))
	}
	return out
}

// Usage is what the window used.
type Usage struct {
	CPUPercent []float64 `json:"cpuPercent"` // per process, of one core
	RSSMB      []float64 `json:"maxRssMB"`   // per process
	// RSSFirstMinuteMB and RSSLastMinuteMB: each process's highest RSS in the window's first and last minute
	// (whether it is flat over the window); empty for a window shorter than two minutes
	RSSFirstMinuteMB []float64 `json:"rssFirstMinuteMB,omitempty"`
	RSSLastMinuteMB  []float64 `json:"rssLastMinuteMB,omitempty"`
	HostCPU          float64   `json:"hostCpuPercent"`
	// HostSteal is the share of the machine's CPU time the hypervisor gave to other guests (the "st" of
	// top): high steal means every figure is slowed down by a neighbour, the baseline's too.
	HostSteal float64 `json:"hostStealPercent"`
}

// end stops sampling and returns the figures (a process that exited counts up to its last sample).
func (u *usage) end() Usage {
	wall := time.Since(u.start)
	host := readHostCPU()
	var out Usage
	close(u.stop)
	<-u.finished
	u.sample() // the CPU until now (a process that exited counts up to its last sample)
	u.mu.Lock()
	for i := range u.pids {
		out.CPUPercent = append(out.CPUPercent, round1(100*float64(u.cpuGone[i]+u.cpuLast[i]-u.cpuBase[i])/float64(wall)))
	}
	// the last sample is taken just after wall was read
	end := u.start.Add(wall)
	out.RSSMB = maxRSSBetween(u.samples, len(u.pids), u.start, end.Add(time.Second))
	if wall >= 2*time.Minute-5*time.Second { // a 2-minute window measures a little less
		out.RSSFirstMinuteMB = maxRSSBetween(u.samples, len(u.pids), u.start, u.start.Add(time.Minute))
		out.RSSLastMinuteMB = maxRSSBetween(u.samples, len(u.pids), end.Add(-time.Minute), end.Add(time.Second))
	}
	u.mu.Unlock()
	if busy, total := host.busy-u.host0.busy, host.total-u.host0.total; total > 0 {
		out.HostCPU = round1(100 * float64(busy) / float64(total))
		out.HostSteal = round1(100 * float64(host.steal-u.host0.steal) / float64(total))
	}
	return out
}

// first keeps the figures of the first n processes.
func (u Usage) first(n int) Usage {
	cut := func(f []float64) []float64 { return f[:min(n, len(f))] }
	u.CPUPercent, u.RSSMB = cut(u.CPUPercent), cut(u.RSSMB)
	u.RSSFirstMinuteMB, u.RSSLastMinuteMB = cut(u.RSSFirstMinuteMB), cut(u.RSSLastMinuteMB)
	return u
}

// plus appends x's processes to u's (the machine's figures stay u's). The first and last minute are kept only
// when both windows have them.
func (u Usage) plus(x Usage) Usage {
	u.CPUPercent, u.RSSMB = append(u.CPUPercent, x.CPUPercent...), append(u.RSSMB, x.RSSMB...)
	if len(u.RSSFirstMinuteMB) > 0 && len(x.RSSFirstMinuteMB) > 0 {
		u.RSSFirstMinuteMB = append(u.RSSFirstMinuteMB, x.RSSFirstMinuteMB...)
		u.RSSLastMinuteMB = append(u.RSSLastMinuteMB, x.RSSLastMinuteMB...)
	} else {
		u.RSSFirstMinuteMB, u.RSSLastMinuteMB = nil, nil
	}
	return u
}

func round1(f float64) float64 { return float64(int64(f*10+0.5)) / 10 }

type hostCPU struct{ busy, total, steal int64 }

// readHostCPU reads the machine's CPU counters (all cores) from /proc/stat.
func readHostCPU() hostCPU {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return hostCPU{}
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	var h hostCPU
	for i, v := range f[1:] {
		n, _ := strconv.ParseInt(v, 10, 64)
		if i >= 8 { // guest times are already in user
			break
		}
		h.total += n
		switch i {
		case 3, 4: // idle, iowait
		case 7:
			h.steal += n
		default:
			h.busy += n
		}
	}
	return h
}

// loadAvg is /proc/loadavg's first three fields.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// mntr reads one figure of ZooKeeper's `mntr` (e.g. zk_packets_received) as text.
func mntr(addr, name string) (string, error) {
	out, err := zktest.FourLetter(addr, "mntr")
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(out, "\n") {
		k, v, ok := strings.Cut(line, "\t")
		if ok && k == name {
			return strings.TrimSpace(v), nil
		}
	}
	return "", fmt.Errorf("mntr has no %s: %q", name, out)
}

// zkCounter reads one counter of `mntr` (e.g. zk_packets_received).
func zkCounter(addr, name string) (int64, error) {
	v, err := mntr(addr, name)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(v, 10, 64)
}

// pidListening finds the process listening on 127.0.0.1:port (ZooKeeper's JVM, which zktest starts but does
// not name), by the socket's inode in /proc/net/tcp and the processes' descriptors. 0 if not found.
func pidListening(port int) int {
	want := fmt.Sprintf(":%04X", port)
	inode := ""
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} { // a JVM listens on a dual-stack socket
		b, err := os.ReadFile(table)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			f := strings.Fields(line)
			if len(f) > 9 && strings.HasSuffix(f[1], want) && f[3] == "0A" { // 0A: LISTEN
				inode = f[9]
				break
			}
		}
	}
	if inode == "" {
		return 0
	}
	target := "socket:[" + inode + "]"
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
		if err != nil {
			continue // not ours
		}
		for _, fd := range fds {
			if l, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name())); err == nil && l == target {
				return pid
			}
		}
	}
	return 0
}

// zkFloat reads one figure of `mntr` that may have decimals (zk_avg_latency).
func zkFloat(addr, name string) (float64, error) {
	v, err := mntr(addr, name)
	if err != nil {
		return 0, err
	}
	return strconv.ParseFloat(v, 64)
}
