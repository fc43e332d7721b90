package cluster

// SessionStanding is what this peer knows of its ZooKeeper session at one moment (sessiongate.Standing's
// fields, which dispatch decides on).
type SessionStanding struct {
	// Healthy: connected, with the session confirmed by the server.
	Healthy bool
	// Lease: Healthy and proven alive within two thirds of the session timeout (Session.Lease).
	Lease bool
	// Expired: an expiry was seen and there is no new session yet.
	Expired bool
	// Epoch counts the expiries seen by this peer: it changes whenever the session is lost.
	Epoch int64
}

// Standing returns the session's standing, and a channel closed at its next change: a state change of the
// connection, or a heartbeat that renewed the lease. A fire that waits for a suspended session waits on it.
func (s *Session) Standing() (SessionStanding, <-chan struct{}) {
	s.mu.Lock()
	st := SessionStanding{Healthy: s.healthy, Expired: s.expired, Epoch: s.expirations.Load()}
	ch := s.changed
	s.mu.Unlock()
	st.Lease = st.Healthy && s.clk.Now().UnixNano()-s.leaseFrom.Load() < int64(s.cfg.SessionTimeout*2/3)
	return st, ch
}

// changedLocked wakes the waiters of Standing; s.mu is held.
func (s *Session) changedLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// SessionStanding returns the session's standing and a channel closed at its next change (Session.Standing).
func (r *Registry) SessionStanding() (SessionStanding, <-chan struct{}) { return r.s.Standing() }
