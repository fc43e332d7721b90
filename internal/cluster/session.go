package cluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/ejserver/ejserver/internal/clock"
)

// SessionConfig configures the connection to ZooKeeper.
type SessionConfig struct {
	// Servers are host:port pairs.
	Servers        []string
	SessionTimeout time.Duration
	// Digest is "user:password" for ZooKeeper's digest scheme; when set, nodes ejserver creates are
	// writable only by that user (and readable by anyone, so ElasticJob's tools still read them).
	Digest string
	Logger *slog.Logger
	Clock  clock.Clock
	// TLS, when set, makes every connection TLS to ZooKeeper's secureClientPort (the servers' addresses
	// must be that port); with Digest too, both apply.
	TLS *tls.Config
}

// SessionEvent is a change of the session's standing that services must act on.
type SessionEvent int

// The session events, in the order they can happen.
const (
	// SessionSuspended: the connection is lost; the session may still live. Start no new work, stop
	// acting as leader until Resumed or Renewed.
	SessionSuspended SessionEvent = iota + 1
	// SessionResumed: reconnected within the same session; ephemeral nodes and watches survived.
	SessionResumed
	// SessionExpired: the server expired the session: every ephemeral node and watch of it is gone.
	SessionExpired
	// SessionRenewed: a new session after an expiry: re-create ephemeral nodes and re-arm watches.
	SessionRenewed
	// SessionWatchesRestored: after a Resumed, ZooKeeper has the persistent watches again; what they cover
	// must be read again, as ZooKeeper does not replay what changed meanwhile (jobwatch.go).
	SessionWatchesRestored
)

func (e SessionEvent) String() string {
	switch e {
	case SessionSuspended:
		return "suspended"
	case SessionResumed:
		return "resumed"
	case SessionExpired:
		return "expired"
	case SessionRenewed:
		return "renewed"
	case SessionWatchesRestored:
		return "watches restored"
	}
	return "unknown"
}

// Session owns the ZooKeeper connection. It turns go-zookeeper's callback events into an ordered queue
// processed by one goroutine (the callback must never block), tracks whether the session is trustworthy,
// and keeps a lease: a peer that has not confirmed its session recently (frozen, cut off) must not start
// work it may no longer own, whatever the connection state says.
type Session struct {
	cfg  SessionConfig
	log  *slog.Logger
	clk  clock.Clock
	conn *zk.Conn
	acl  []zk.ACL

	queue eventQueue

	mu        sync.Mutex
	closing   bool
	healthy   bool
	sessionID int64
	expired   bool // an expiry was seen and no new session yet
	listeners []func(SessionEvent)
	onWatch   func(zk.Event)
	// inline handles an event where it arrives, on go-zookeeper's receive loop, instead of queueing it for
	// the session goroutine, when it reports true (setInlineHandler).
	inline atomic.Pointer[func(zk.Event) bool]
	// changed is closed, and replaced, when the session's standing changes (standing.go)
	changed chan struct{}

	// leaseFrom is the send time (clock nanos) of the last request that proved the session alive.
	leaseFrom atomic.Int64
	// covered reports whether a persistent watch covers a path (setCovered).
	covered     atomic.Pointer[func(string) bool]
	reconnects  atomic.Int64
	expirations atomic.Int64
	reads       readCounts
	coalesce    readCoalescer
	// eventSeq is the sequence number of the event the session goroutine handles (eventQueue.pop)
	eventSeq atomic.Uint64

	stop chan struct{}
	wg   sync.WaitGroup
}

// Dial connects and waits until ZooKeeper grants a session or ctx ends.
func Dial(ctx context.Context, cfg SessionConfig) (*Session, error) {
	if len(cfg.Servers) == 0 {
		return nil, errors.New("no ZooKeeper servers given")
	}
	if cfg.SessionTimeout <= 0 {
		cfg.SessionTimeout = 10 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	s := &Session{cfg: cfg, log: cfg.Logger, clk: cfg.Clock, stop: make(chan struct{}), acl: zk.WorldACL(zk.PermAll),
		changed: make(chan struct{})}
	s.queue.init()
	if cfg.Digest != "" {
		user, pass, ok := strings.Cut(cfg.Digest, ":")
		if !ok || user == "" || pass == "" {
			return nil, errors.New("ZooKeeper digest must be user:password")
		}
		s.acl = append(zk.DigestACL(zk.PermAll, user, pass), zk.WorldACL(zk.PermRead)...)
	}
	dialer := zk.Dialer(net.DialTimeout) // go-zookeeper's default
	if cfg.TLS != nil {
		dialer = tlsDialer(cfg.TLS)
	}
	dialer = boundedDialer(dialer, cfg.SessionTimeout)
	conn, _, err := zk.Connect(cfg.Servers, cfg.SessionTimeout,
		zk.WithEventCallback(s.onEvent),
		zk.WithLogger(zkLogger{s.log}),
		zk.WithLogInfo(false),
		zk.WithDialer(dialer))
	if err != nil {
		return nil, fmt.Errorf("connect to ZooKeeper %v: %w", cfg.Servers, err)
	}
	s.conn = conn
	s.wg.Add(1)
	go s.loop()

	if err := s.waitHealthy(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("no ZooKeeper session from %v: %w", cfg.Servers, err)
	}
	if cfg.Digest != "" {
		if err := conn.AddAuth("digest", []byte(cfg.Digest)); err != nil {
			s.Close()
			return nil, fmt.Errorf("authenticate to ZooKeeper: %w", err)
		}
	}
	s.wg.Add(1)
	go s.heartbeat()
	return s, nil
}

func (s *Session) waitHealthy(ctx context.Context) error {
	return s.queue.waitFor(ctx, func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.healthy
	})
}

// Close ends the session (its ephemeral nodes go at once) and waits for the session's goroutines.
func (s *Session) Close() {
	select {
	case <-s.stop:
		return
	default:
	}
	close(s.stop)
	s.mu.Lock()
	s.closing = true
	s.mu.Unlock()
	if s.conn != nil {
		s.conn.Close()
	}
	s.queue.close()
	s.wg.Wait()
}

// fire tells the listeners of ev (on the event goroutine).
func (s *Session) fire(ev SessionEvent) {
	s.mu.Lock()
	listeners, closing := s.listeners, s.closing
	s.mu.Unlock()
	if closing {
		return
	}
	for _, fn := range listeners {
		fn(ev)
	}
}

// OnEvent registers a listener for session events. Listeners run on the session's event goroutine, in
// order, and must not block.
func (s *Session) OnEvent(fn func(SessionEvent)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.listeners = append(s.listeners, fn)
}

// setWatchHandler routes every watch event to fn (on the event goroutine; fn must not block).
func (s *Session) setWatchHandler(fn func(zk.Event)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.onWatch = fn
}

// setInlineHandler lets fn take watch events where they arrive, before they are queued: an event it reports
// true for is counted and not queued. fn runs on go-zookeeper's receive loop, so it must be short and must
// never block; the events it takes are not ordered against the queued ones the session goroutine handles.
func (s *Session) setInlineHandler(fn func(zk.Event) bool) {
	s.inline.Store(&fn)
}

// onEvent is go-zookeeper's event callback: an event goes to the inline handler, or to the queue.
func (s *Session) onEvent(ev zk.Event) {
	if h := s.inline.Load(); h != nil && (*h)(ev) {
		s.reads.events.Add(1)
		return
	}
	s.queue.push(ev)
}

// Healthy reports whether the session is connected and confirmed.
func (s *Session) Healthy() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.healthy
}

// ID is the current session id (0 while there is none).
func (s *Session) ID() int64 { return s.conn.SessionID() }

// Lease reports whether the session is healthy and was proven alive within two thirds of the session
// timeout: the window in which no other peer can have taken over this peer's ephemeral nodes.
func (s *Session) Lease() bool {
	if !s.Healthy() {
		return false
	}
	from := s.leaseFrom.Load()
	return s.clk.Now().UnixNano()-from < int64(s.cfg.SessionTimeout*2/3)
}

// Timeout is the negotiated-or-requested session timeout.
func (s *Session) Timeout() time.Duration { return s.cfg.SessionTimeout }

// Reconnects counts reconnections; Expirations counts session expiries.
func (s *Session) Reconnects() int64  { return s.reconnects.Load() }
func (s *Session) Expirations() int64 { return s.expirations.Load() }

// loop processes queued events in order.
func (s *Session) loop() {
	defer s.wg.Done()
	for {
		ev, seq, ok := s.queue.pop()
		if !ok {
			return
		}
		s.eventSeq.Store(seq)
		if ev.Type == zk.EventSession {
			s.handleState(ev.State)
			continue
		}
		if ev.Type == zk.EventNotWatching {
			continue // expiry: handled as SessionExpired/SessionRenewed
		}
		if ev.Type == zk.EventPersistentWatchesRestored {
			s.fire(SessionWatchesRestored)
			continue
		}
		s.reads.events.Add(1)
		s.mu.Lock()
		h := s.onWatch
		s.mu.Unlock()
		if h != nil {
			h(ev)
		}
	}
}

func (s *Session) handleState(state zk.State) {
	var fire []SessionEvent
	s.mu.Lock()
	switch state {
	case zk.StateHasSession:
		id := s.conn.SessionID()
		switch {
		case s.sessionID == 0:
			// the first session
		case s.expired || id != s.sessionID:
			fire = append(fire, SessionRenewed)
		case !s.healthy:
			fire = append(fire, SessionResumed)
		}
		if !s.healthy && s.sessionID != 0 {
			s.reconnects.Add(1)
		}
		s.sessionID, s.healthy, s.expired = id, true, false
		s.leaseFrom.Store(s.clk.Now().UnixNano())
	case zk.StateExpired:
		s.expirations.Add(1)
		if s.healthy {
			fire = append(fire, SessionSuspended)
		}
		s.healthy, s.expired = false, true
		fire = append(fire, SessionExpired)
	case zk.StateDisconnected, zk.StateConnecting, zk.StateConnected:
		// StateConnected is only TCP: the session is confirmed by StateHasSession.
		if s.healthy {
			fire = append(fire, SessionSuspended)
		}
		s.healthy = false
	case zk.StateAuthFailed:
		s.log.Error("ZooKeeper authentication failed: check --zk-digest")
	}
	listeners := s.listeners
	if s.closing {
		fire = nil // our own Close: nothing to report
	}
	s.changedLocked()
	s.mu.Unlock()
	for _, ev := range fire {
		s.log.Info("ZooKeeper session "+ev.String(), "session", fmt.Sprintf("0x%x", s.conn.SessionID()))
		for _, fn := range listeners {
			fn(ev)
		}
	}
}

// heartbeat renews the lease: a cheap read every third of the session timeout. The lease starts at the
// request's send time, so it never claims more than the server confirmed.
func (s *Session) heartbeat() {
	defer s.wg.Done()
	every := s.cfg.SessionTimeout / 3
	t := s.clk.NewTimer(every)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C():
		}
		sent := s.clk.Now().UnixNano()
		id := s.conn.SessionID()
		if _, _, err := s.conn.Exists("/"); err == nil && s.Healthy() && s.conn.SessionID() == id && id != 0 {
			if sent > s.leaseFrom.Load() {
				s.leaseFrom.Store(sent)
				s.mu.Lock()
				s.changedLocked() // a lease gone stale (a frozen peer) may be sound again
				s.mu.Unlock()
			}
		}
		t.Reset(every)
	}
}

// secretACL is the ACL of nodes that hold secrets: with a digest, only the digest may read or write them.
func (s *Session) secretACL() []zk.ACL {
	if s.cfg.Digest == "" {
		return zk.WorldACL(zk.PermAll)
	}
	user, pass, _ := strings.Cut(s.cfg.Digest, ":")
	return zk.DigestACL(zk.PermAll, user, pass)
}

// The ZooKeeper operations ejserver uses. Creates apply the session's ACL.

// get and exists read a node without a watch; concurrent ones travel together (coalesce.go).
func (s *Session) get(p string) ([]byte, *zk.Stat, error) {
	res := s.readOne(p, false)
	return res.Data, res.Stat, res.Err
}

// getW, childrenW and existsW read a node and make sure a watch covers it: a one-shot watch, unless a
// persistent watch of the session covers the node already (the registry's per-job watches, jobwatch.go).
func (s *Session) getW(p string) ([]byte, *zk.Stat, error) {
	if s.isCovered(p) {
		return s.get(p)
	}
	s.reads.get.Add(1)
	b, st, _, err := s.conn.GetW(p)
	return b, st, err
}

func (s *Session) children(p string) ([]string, *zk.Stat, error) {
	s.reads.listed(p)
	return s.conn.Children(p)
}

func (s *Session) childrenW(p string) ([]string, *zk.Stat, error) {
	s.reads.listed(p)
	if s.isCovered(p) {
		return s.conn.Children(p)
	}
	c, st, _, err := s.conn.ChildrenW(p)
	return c, st, err
}

func (s *Session) exists(p string) (bool, *zk.Stat, error) {
	res := s.readOne(p, true)
	switch {
	case errors.Is(res.Err, zk.ErrNoNode):
		return false, nil, nil
	case res.Err != nil:
		return false, nil, res.Err
	}
	return true, res.Stat, nil
}

func (s *Session) existsW(p string) (bool, *zk.Stat, error) {
	if s.isCovered(p) {
		return s.exists(p)
	}
	s.reads.exists.Add(1)
	ok, st, _, err := s.conn.ExistsW(p)
	if err != nil {
		return false, nil, err
	}
	return ok, st, nil
}

// multiRead sends reads as one request (ZooKeeper 3.6+; zk.ErrUnimplemented before); they set no watch.
func (s *Session) multiRead(ops []zk.ReadOp) ([]zk.ReadResult, error) {
	if len(ops) == 0 {
		return nil, nil
	}
	s.reads.multi.Add(1)
	return s.conn.MultiRead(ops...)
}

// addRecursiveWatch arms a persistent recursive watch on p (ZooKeeper 3.6+; zk.ErrUnimplemented before).
func (s *Session) addRecursiveWatch(p string) error {
	return s.conn.AddWatch(p, zk.AddWatchModePersistentRecursive)
}

// removeWatches removes every watch this session holds on p, persistent ones included (removeWatches,
// ZooKeeper 3.5+; zk.ErrNoWatcher when there is none).
func (s *Session) removeWatches(p string) error {
	return s.conn.RemoveAllWatches(p)
}

// setCovered tells the session which paths a persistent watch covers (see getW).
func (s *Session) setCovered(fn func(string) bool) { s.covered.Store(&fn) }

func (s *Session) isCovered(p string) bool {
	fn := s.covered.Load()
	return fn != nil && (*fn)(p)
}

func (s *Session) create(p string, data []byte, flags int32) error {
	s.reads.create.Add(1)
	_, err := s.conn.Create(p, data, flags, s.acl)
	return err
}

func (s *Session) set(p string, data []byte, version int32) (*zk.Stat, error) {
	s.reads.set.Add(1)
	return s.conn.Set(p, data, version)
}

func (s *Session) del(p string, version int32) error {
	s.reads.del.Add(1)
	return s.conn.Delete(p, version)
}

func (s *Session) multi(ops ...any) ([]zk.MultiResponse, error) {
	s.reads.writeMulti.Add(1)
	return s.conn.Multi(ops...)
}

// Op builders for multi.

func (s *Session) opCreate(p string, data []byte, flags int32) *zk.CreateRequest {
	return &zk.CreateRequest{Path: p, Data: data, Acl: s.acl, Flags: flags}
}

func opSet(p string, data []byte, version int32) *zk.SetDataRequest {
	return &zk.SetDataRequest{Path: p, Data: data, Version: version}
}

func opDelete(p string, version int32) *zk.DeleteRequest {
	return &zk.DeleteRequest{Path: p, Version: version}
}

func opCheck(p string, version int32) *zk.CheckVersionRequest {
	return &zk.CheckVersionRequest{Path: p, Version: version}
}

// ensurePath creates p and its missing parents as empty persistent nodes.
func (s *Session) ensurePath(p string) error {
	if p == "/" || p == "" {
		return nil
	}
	if ok, _, err := s.exists(p); err != nil || ok {
		return err
	}
	if err := s.ensurePath(parent(p)); err != nil {
		return err
	}
	if err := s.create(p, nil, 0); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		return fmt.Errorf("create %s: %w", p, err)
	}
	return nil
}

// zkLogger sends go-zookeeper's log lines to slog at debug level: they are reconnect chatter.
type zkLogger struct{ l *slog.Logger }

func (z zkLogger) Printf(format string, args ...any) {
	z.l.Debug(fmt.Sprintf(format, args...), "component", "zk")
}
