package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// ZKState is what the ZooKeeper server holds at one moment (mntr, which is cheap on a big server; wchc is
// not, so watches are counted by mntr's total and not listed by connection), and its process's resident size.
type ZKState struct {
	Znodes    int64   `json:"znodes"`
	Watches   int64   `json:"watches"`
	DataBytes int64   `json:"approximateDataBytes"`
	RSSMB     float64 `json:"rssMB,omitempty"`
	Packets   int64   `json:"packetsReceived"`
}

// zkState reads mntr's figures and, when the process is known, its current RSS.
func zkState(addr string, pid int) (ZKState, error) {
	var s ZKState
	var err error
	for _, f := range []struct {
		name string
		to   *int64
	}{{"zk_znode_count", &s.Znodes}, {"zk_watch_count", &s.Watches}, {"zk_approximate_data_size", &s.DataBytes},
		{"zk_packets_received", &s.Packets}} {
		if *f.to, err = zkCounter(addr, f.name); err != nil {
			return s, err
		}
	}
	if pid > 0 {
		s.RSSMB = currentRSSMB(pid)
	}
	return s, nil
}

// currentRSSMB is a process's resident set now (VmRSS), 0 if unknown.
func currentRSSMB(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			if err != nil {
				return 0
			}
			return round1(kb / 1024)
		}
	}
	return 0
}

// zkStateLine says what a run's ZooKeeper held at each moment read, and how many requests registering and
// scheduling the jobs cost it per job.
func zkStateLine(r Result) string {
	var parts []string
	for _, m := range []struct {
		what string
		s    *ZKState
	}{{"with the peers up", r.ZKStart}, {"when every peer was ready", r.ZKReady}, {"at the window's end", r.ZKEnd}} {
		if m.s == nil {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %d znodes, %d watches, %.1f MB of data, RSS %.0f MB", m.what, m.s.Znodes, m.s.Watches,
			float64(m.s.DataBytes)/1e6, m.s.RSSMB))
	}
	if r.ZKStart != nil && r.ZKReady != nil && r.Jobs > 0 {
		parts = append(parts, fmt.Sprintf("%.1f requests per job from the start until every peer was ready",
			float64(r.ZKReady.Packets-r.ZKStart.Packets)/float64(r.Jobs)))
	}
	if len(parts) == 0 {
		return ""
	}
	return "ZooKeeper: " + strings.Join(parts, "; ")
}
