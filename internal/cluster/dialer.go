package cluster

import (
	"net"
	"time"

	"github.com/go-zookeeper/zk"
)

// boundedDialer wraps a dialer so that no deadline go-zookeeper sets on a connection lies further ahead than
// limit (the session timeout).
//
// go-zookeeper gives the handshake (the connect request and its answer) ten times its receive timeout: 26.7 s
// for a 4 s session, 200 s for a 30 s one. A ZooKeeper server that is starting accepts connections before it
// serves them and may neither answer nor close one it accepted then (seen with ZooKeeper 3.8 restarted under
// load): the client waited out the whole deadline while the server was up, its session expired meanwhile, and
// the peer fired nothing for half a minute. No answer within a session timeout is no answer: the client drops
// that connection and tries again (the same server, or the next), while its session may still be resumed.
// The receive loop's own deadlines (two thirds of the session timeout) are below the limit and unchanged.
func boundedDialer(dial zk.Dialer, limit time.Duration) zk.Dialer {
	return func(network, address string, timeout time.Duration) (net.Conn, error) {
		c, err := dial(network, address, timeout)
		if err != nil {
			return nil, err
		}
		return boundedConn{Conn: c, limit: limit}, nil
	}
}

// boundedConn caps the deadlines set on it at limit from now; a zero deadline (none) stays none.
type boundedConn struct {
	net.Conn
	limit time.Duration
}

func (c boundedConn) SetReadDeadline(t time.Time) error { return c.Conn.SetReadDeadline(c.cap(t)) }

func (c boundedConn) SetWriteDeadline(t time.Time) error { return c.Conn.SetWriteDeadline(c.cap(t)) }

func (c boundedConn) SetDeadline(t time.Time) error { return c.Conn.SetDeadline(c.cap(t)) }

// cap uses the wall clock, not the injected one: the kernel enforces these deadlines.
func (c boundedConn) cap(t time.Time) time.Time {
	return capDeadline(t, time.Now(), c.limit)
}

// capDeadline is t, or now+limit when t is later; the zero time (no deadline) is kept.
func capDeadline(t, now time.Time, limit time.Duration) time.Time {
	if t.IsZero() || limit <= 0 {
		return t
	}
	if lim := now.Add(limit); t.After(lim) {
		return lim
	}
	return t
}
