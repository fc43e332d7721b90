package tcpproxy

import (
	"bufio"
	"errors"
	"net"
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// echoServer answers every line it reads with the same line, until the test ends.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() {
		ln.Close()
		<-done
	})
	go func() {
		defer close(done)
		var conns []net.Conn
		ended := make(chan struct{})
		for {
			c, err := ln.Accept()
			if err != nil {
				break
			}
			conns = append(conns, c)
			go func() {
				defer func() { ended <- struct{}{} }()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					if _, err := c.Write([]byte(line)); err != nil {
						return
					}
				}
			}()
		}
		for _, c := range conns {
			c.Close()
		}
		for range conns {
			<-ended
		}
	}()
	return ln.Addr().String()
}

func start(t *testing.T) *Proxy {
	t.Helper()
	p, err := New(echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// client is one connection through the proxy.
type client struct {
	c net.Conn
	r *bufio.Reader
}

func dial(t *testing.T, p *Proxy) *client {
	t.Helper()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &client{c: c, r: bufio.NewReader(c)}
}

// send writes a line and reports whether it was written.
func (c *client) send() bool {
	_ = c.c.SetWriteDeadline(time.Now().Add(time.Second))
	_, err := c.c.Write([]byte("ping\n"))
	return err == nil
}

// recv waits up to within for the echo: it returns nil on the echo, os.ErrDeadlineExceeded when nothing came,
// and another error when the connection ended.
func (c *client) recv(within time.Duration) error {
	_ = c.c.SetReadDeadline(time.Now().Add(within))
	line, err := c.r.ReadString('\n')
	if err == nil && line != "ping\n" {
		return errors.New("echo " + line)
	}
	return err
}

// roundTrip reports whether a line sent through c came back within a second.
func (c *client) roundTrip() bool { return c.send() && c.recv(time.Second) == nil }

func silent(err error) bool { return errors.Is(err, os.ErrDeadlineExceeded) }

// The soak's nemesis heals every link when it ends: a link that was never cut must keep its connections, or
// the heal itself is a fault (all peers' sessions suspended at once) that no event records. A cut link's
// connections are closed on the heal, so clients reconnect afresh.
func TestHealKeepsHealthyConnectionsAndDropsCutOnes(t *testing.T) {
	p := start(t)
	c := dial(t, p)
	if !c.roundTrip() {
		t.Fatal("no echo through the proxy")
	}
	p.Heal() // a heal of a link that was not cut
	if !c.roundTrip() {
		t.Fatal("healing a link that was not cut broke its connection")
	}
	p.Cut()
	if !c.send() {
		t.Fatal("a cut closed the connection: it is a black hole")
	}
	if err := c.recv(200 * time.Millisecond); !silent(err) {
		t.Fatalf("through a cut link: %v, want silence", err)
	}
	p.Heal()
	if err := c.recv(2 * time.Second); err == nil || silent(err) {
		t.Fatalf("the cut connection was not closed by the heal: %v", err)
	}
	if !dial(t, p).roundTrip() {
		t.Fatal("no echo through the healed link")
	}
}

// A connection made during a cut is accepted and left silent; the heal closes it.
func TestCutLeavesNewConnectionsSilent(t *testing.T) {
	p := start(t)
	p.Cut()
	c := dial(t, p)
	if !c.send() {
		t.Fatal("a connection made during a cut was refused: it is a black hole")
	}
	if err := c.recv(200 * time.Millisecond); !silent(err) {
		t.Fatalf("a connection made during a cut: %v, want silence", err)
	}
	p.Heal()
	if err := c.recv(2 * time.Second); err == nil || silent(err) {
		t.Fatalf("the heal did not close a connection made during the cut: %v", err)
	}
}

// Refuse closes the connections and every new one until the heal.
func TestRefuseClosesConnectionsUntilHeal(t *testing.T) {
	p := start(t)
	c := dial(t, p)
	if !c.roundTrip() {
		t.Fatal("no echo through the proxy")
	}
	p.Refuse()
	if err := c.recv(2 * time.Second); err == nil || silent(err) {
		t.Fatalf("a refusal did not close the connection: %v", err)
	}
	c2 := dial(t, p)
	c2.send()
	if err := c2.recv(2 * time.Second); err == nil || silent(err) {
		t.Fatalf("a connection made during a refusal: %v, want it closed", err)
	}
	p.Heal()
	if !dial(t, p).roundTrip() {
		t.Fatal("no echo after the heal")
	}
}

// Drop closes the connections and holds new ones for the hold, then connects them.
func TestDropHoldsNewConnectionsForTheHold(t *testing.T) {
	p := start(t)
	c := dial(t, p)
	if !c.roundTrip() {
		t.Fatal("no echo through the proxy")
	}
	const hold = 300 * time.Millisecond
	began := time.Now()
	p.Drop(hold)
	if err := c.recv(2 * time.Second); err == nil || silent(err) {
		t.Fatalf("a drop did not close the connection: %v", err)
	}
	c2 := dial(t, p)
	if !c2.send() {
		t.Fatal("a connection made during a drop's hold was refused")
	}
	if err := c2.recv(5 * time.Second); err != nil {
		t.Fatalf("a connection held by a drop was not connected after the hold: %v", err)
	}
	if held := time.Since(began); held < hold {
		t.Fatalf("the echo came %s after the drop, within its hold of %s", held, hold)
	}
	if !c2.roundTrip() {
		t.Fatal("the held connection does not echo")
	}
}

// Heal ends a drop's hold: the held connections are connected at once.
func TestHealEndsADropsHold(t *testing.T) {
	p := start(t)
	p.Drop(time.Hour)
	c := dial(t, p)
	c.send()
	if err := c.recv(200 * time.Millisecond); !silent(err) {
		t.Fatalf("a connection made during a drop's hold: %v, want silence", err)
	}
	p.Heal()
	if err := c.recv(5 * time.Second); err != nil {
		t.Fatalf("the heal did not connect the held connection: %v", err)
	}
	if !dial(t, p).roundTrip() {
		t.Fatal("a new connection after the heal does not echo")
	}
}

// DropAll drops every proxy's connections; Close ends held connections and is safe twice.
func TestDropAllAndClose(t *testing.T) {
	a, b := start(t), start(t)
	ca, cb := dial(t, a), dial(t, b)
	if !ca.roundTrip() || !cb.roundTrip() {
		t.Fatal("no echo through the proxies")
	}
	DropAll(time.Hour, a, b)
	for _, c := range []*client{ca, cb} {
		if err := c.recv(2 * time.Second); err == nil || silent(err) {
			t.Fatalf("DropAll did not close a connection: %v", err)
		}
	}
	held := dial(t, a)
	held.send()
	a.Close()
	if err := held.recv(2 * time.Second); err == nil || silent(err) {
		t.Fatalf("Close did not close a held connection: %v", err)
	}
	a.Close()
}
