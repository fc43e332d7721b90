package main

import (
	"fmt"
	"time"
)

// RestartResult: the last peer is stopped (SIGTERM) and started again inside the window (-restart-peer-at).
// Its new process has a new instance id (ip@-@pid), so the others reshard twice: when it leaves and when it
// is back. The window's missed and late items say what the restart cost the fires.
type RestartResult struct {
	Peer       int     `json:"peer"`
	At         string  `json:"at"`         // offset into the window
	StopMs     float64 `json:"stopMs"`     // from SIGTERM to its exit
	APIReadyMs float64 `json:"apiReadyMs"` // from the new process's start until /readyz answers
	ReadyMs    float64 `json:"readyMs"`    // from the new process's start until it schedules every job
	Err        string  `json:"error,omitempty"`
}

// restartPeer restarts the cluster's last peer at t (in the background; the result arrives on the channel).
func (e *env) restartPeer(c *benchCluster, t time.Time, jobs int) <-chan *RestartResult {
	out := make(chan *RestartResult, 1)
	i := len(c.peers) - 1
	p := c.peers[i]
	go func() {
		rr := &RestartResult{Peer: i + 1, At: e.o.restartAt.String()}
		defer func() { out <- rr }()
		time.Sleep(time.Until(t))
		e.logf("restarting peer %d (load average %s)", i+1, loadAvg())
		c.noteStop(i) // its process's counters until now count in the window's
		t0 := time.Now()
		_ = p.Stop(20 * time.Second) // its exit status after SIGTERM is not what is measured
		t1 := time.Now()
		rr.StopMs = ms(t1.UnixNano() - t0.UnixNano())
		if err := p.Restart(); err != nil {
			rr.Err = err.Error()
			return
		}
		rr.APIReadyMs = float64(time.Since(t1).Milliseconds())
		deadline := t1.Add(10 * time.Minute)
		for c.metric(p, "ejserver_scheduled_jobs") < float64(jobs) {
			if time.Now().After(deadline) {
				rr.Err = fmt.Sprintf("the restarted peer did not schedule %d jobs within 10 minutes", jobs)
				return
			}
			time.Sleep(200 * time.Millisecond)
		}
		rr.ReadyMs = float64(time.Since(t1).Milliseconds())
		e.logf("peer %d stopped in %.1f s, API ready %.1f s and every job scheduled %.1f s after its start",
			i+1, rr.StopMs/1000, rr.APIReadyMs/1000, rr.ReadyMs/1000)
	}()
	return out
}
