package main

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// completer is the receiver's side of long-running items in the async workload (docs/long-running.md). The
// recorder hands it each delivery; it answers 202 Accepted and schedules the item's completion
// ({"status":"success"}, Authorization: Bearer {callbackToken}) a uniformly random delay later, sent either
// to the callbackUrl the delivery named or to another peer (any peer accepts callbacks), half and half, and
// times each callback's round trip. A share of the completions answered 200 is sent again a few seconds
// later to yet another peer: the same completion repeated must be 200 too, and must not be recorded twice.
//
// The draws (delay, target, repeat) come from one seeded generator in the order deliveries arrive, so a
// run's mix is reproducible while its assignment to executions depends on arrival order.
type completer struct {
	cfg    completerConfig
	client *http.Client
	sem    chan struct{} // callbacks in flight at most
	closed atomic.Bool

	mu      sync.Mutex
	rng     *rand.Rand
	peers   []string // the peers' base URLs
	until   int64    // Unix ns: deliveries of fires scheduled at or after it are answered 200 (0: no end)
	execs   map[string]*asyncExec
	pending int // callbacks scheduled and not yet answered
	st      completerStats
}

type completerConfig struct {
	seed                 uint64
	minDelay, maxDelay   time.Duration // of the completion after the delivery
	repeatShare          float64       // of the completions answered 200, the share sent again
	repeatMin, repeatMax time.Duration // of the repeat after the first completion's answer
	conc                 int           // callbacks in flight at most
}

// asyncExec is what the receiver saw of one execution id.
type asyncExec struct {
	ok int // completions (not repeats) answered 200
}

// callbackStats counts one kind of callback: the first completion of each delivery, or its repeat.
type callbackStats struct {
	Sent     int            `json:"sent"`
	OK       int            `json:"ok"`                 // answered 200
	ByStatus map[string]int `json:"byStatus,omitempty"` // the other answers, by status ("error": no answer)
	ToOwn    int            `json:"toOwnPeer"`          // sent to the callbackUrl (the peer that POSTed the item)
	ToOther  int            `json:"toOtherPeer"`        // sent to another peer
	// Latency is each callback's round trip (request written to answer read), Own and Other split it by target.
	Latency Latency `json:"roundTrip"`
	Own     Latency `json:"roundTripOwnPeer"`
	Other   Latency `json:"roundTripOtherPeer"`
	own     []int64
	other   []int64
}

type completerStats struct {
	accepted   int // deliveries answered 202
	declined   int // deliveries of fires at or after the end, answered 200
	noCallback int // deliveries without callbackUrl or callbackToken, answered 200
	idMismatch int // webhook-id header other than the body's executionId
	first      callbackStats
	repeat     callbackStats
	lag        []int64 // a callback's start minus its due time (the sender keeping up)
	problems   []string
}

const problemsKept = 5

func newCompleter(cfg completerConfig) *completer {
	tr := &http.Transport{MaxIdleConns: 2 * cfg.conc, MaxIdleConnsPerHost: cfg.conc, IdleConnTimeout: 90 * time.Second}
	return &completer{cfg: cfg, client: &http.Client{Transport: tr, Timeout: 30 * time.Second},
		sem: make(chan struct{}, cfg.conc), rng: rand.New(rand.NewPCG(cfg.seed, cfg.seed^0x9e3779b97f4a7c15)),
		execs: map[string]*asyncExec{}}
}

// setPeers names the peers' base URLs (http://host:port), the targets of callbacks not sent to the callbackUrl.
func (c *completer) setPeers(urls []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.peers = urls
}

// acceptBefore makes deliveries of fires scheduled at or after t answered 200: nothing is accepted after the
// window, so that every accepted item's end can be awaited and counted.
func (c *completer) acceptBefore(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.until = t.UnixNano()
}

// callback is one completion to send.
type callback struct {
	id, url, token string
	owner          int  // the peer that POSTed the item (named by its callbackUrl; -1 if none is)
	own            bool // url is the callbackUrl's peer
	due            time.Time
	repeat         bool          // this is the repeat
	again          bool          // send a repeat after a 200
	againAfter     time.Duration // how long after
	againPeer      int           // to which peer
}

// take decides a delivery's answer: 202 with its completion scheduled, or 200.
func (c *completer) take(rec *record, webhookID, callbackURL, token string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.until != 0 && rec.scheduled >= c.until {
		c.st.declined++
		return http.StatusOK
	}
	if callbackURL == "" || token == "" {
		c.st.noCallback++
		return http.StatusOK
	}
	if webhookID != rec.execID() {
		c.st.idMismatch++
	}
	c.st.accepted++
	if c.execs[rec.execID()] == nil {
		c.execs[rec.execID()] = &asyncExec{}
	}

	delay := c.cfg.minDelay + time.Duration(c.rng.Int64N(int64(c.cfg.maxDelay-c.cfg.minDelay)+1))
	owner := c.peerOf(callbackURL)
	cb := callback{id: rec.execID(), url: callbackURL, token: token, owner: owner, own: true, due: time.Now().Add(delay)}
	target := owner
	if c.rng.IntN(2) == 1 && len(c.peers) > 1 {
		target = c.otherPeer(owner)
		cb.own, cb.url = false, c.peers[target]+"/api/v1/executions/"+rec.execID()
	}
	if c.rng.Float64() < c.cfg.repeatShare {
		cb.again = true
		cb.againAfter = c.cfg.repeatMin + time.Duration(c.rng.Int64N(int64(c.cfg.repeatMax-c.cfg.repeatMin)+1))
		cb.againPeer = c.otherPeer(target)
	}
	c.schedule(cb, delay)
	return http.StatusAccepted
}

// peerOf is the index of the peer a callback URL names (-1 if none).
func (c *completer) peerOf(url string) int {
	for i, p := range c.peers {
		if strings.HasPrefix(url, p+"/") {
			return i
		}
	}
	return -1
}

// otherPeer draws a peer other than not (any peer if there is only one).
func (c *completer) otherPeer(not int) int {
	if len(c.peers) < 2 || not < 0 {
		return c.rng.IntN(max(1, len(c.peers)))
	}
	i := c.rng.IntN(len(c.peers) - 1)
	if i >= not {
		i++
	}
	return i
}

// schedule sends cb after delay; c.mu is held.
func (c *completer) schedule(cb callback, delay time.Duration) {
	c.pending++
	time.AfterFunc(delay, func() { c.send(cb) })
}

// send posts one completion and records its answer; after a 200 it schedules the repeat, if drawn.
func (c *completer) send(cb callback) {
	if c.closed.Load() {
		c.mu.Lock()
		c.pending--
		c.mu.Unlock()
		return
	}
	c.sem <- struct{}{}
	start := time.Now()
	status, problem := c.post(cb.url+"/complete", cb.token)
	rt := time.Since(start)
	<-c.sem

	c.mu.Lock()
	defer c.mu.Unlock()
	c.pending--
	s := &c.st.first
	if cb.repeat {
		s = &c.st.repeat
	}
	s.Sent++
	if cb.own {
		s.ToOwn++
		s.own = append(s.own, int64(rt))
	} else {
		s.ToOther++
		s.other = append(s.other, int64(rt))
	}
	c.st.lag = append(c.st.lag, int64(start.Sub(cb.due)))
	if status != http.StatusOK {
		if s.ByStatus == nil {
			s.ByStatus = map[string]int{}
		}
		key := "error"
		if status > 0 {
			key = fmt.Sprint(status)
		}
		s.ByStatus[key]++
		if len(c.st.problems) < problemsKept {
			kind := "completion"
			if cb.repeat {
				kind = "repeated completion"
			}
			c.st.problems = append(c.st.problems, fmt.Sprintf("%s of %s to %s: %s %s", kind, cb.id, cb.url, key, problem))
		}
		return
	}
	s.OK++
	if cb.repeat {
		return
	}
	if x := c.execs[cb.id]; x != nil {
		x.ok++
	}
	if cb.again && cb.againPeer < len(c.peers) {
		r := callback{id: cb.id, url: c.peers[cb.againPeer] + "/api/v1/executions/" + cb.id, token: cb.token,
			owner: cb.owner, own: cb.againPeer == cb.owner, repeat: true, due: time.Now().Add(cb.againAfter)}
		c.schedule(r, cb.againAfter)
	}
}

var completeBody = []byte(`{"status":"success"}`)

// post sends one completion; it returns the status (0: no answer) and, for another status, what was said.
func (c *completer) post(url, token string) (int, string) {
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(completeBody))
	if err != nil {
		return 0, err.Error()
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := c.client.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		return resp.StatusCode, ""
	}
	return resp.StatusCode, strings.TrimSpace(string(b))
}

// drain waits until every scheduled completion (and repeat) has been answered, or until timeout; it reports
// how many are still pending.
func (c *completer) drain(timeout time.Duration) int {
	deadline := time.Now().Add(timeout)
	for {
		c.mu.Lock()
		n := c.pending
		c.mu.Unlock()
		if n == 0 || time.Now().After(deadline) {
			return n
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// close stops sending: callbacks still due are dropped.
func (c *completer) close() {
	c.closed.Store(true)
	c.client.CloseIdleConnections()
}

// result summarises what the completer saw and sent.
func (c *completer) result() AsyncResult {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.st
	r := AsyncResult{Accepted: st.accepted, AcceptedIDs: len(c.execs), Declined: st.declined, NoCallback: st.noCallback,
		IDMismatch: st.idMismatch, SendLag: latencyOf(st.lag), Pending: c.pending, Problems: st.problems}
	for _, s := range []*callbackStats{&st.first, &st.repeat} {
		s.Latency, s.Own, s.Other = latencyOf(append(append([]int64(nil), s.own...), s.other...)), latencyOf(s.own), latencyOf(s.other)
	}
	r.Completions, r.Repeats = st.first, st.repeat
	for _, x := range c.execs {
		switch {
		case x.ok == 1:
			r.Completed++
		case x.ok > 1:
			r.Completed++
			r.CompletedTwice++
		}
	}
	return r
}
