package soak

import (
	"bufio"
	"net"
	"testing"
	"time"
)

// echoServer answers every line it reads with the same line, until the test ends.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
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
	}()
	return ln.Addr().String()
}

// roundTrip sends a line through c and reports whether it came back within a second.
func roundTrip(c net.Conn, r *bufio.Reader) bool {
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("ping\n")); err != nil {
		return false
	}
	line, err := r.ReadString('\n')
	return err == nil && line == "ping\n"
}

// The nemesis heals every link when it ends: a link that was never cut must keep its connections, or the
// heal itself is a fault (all peers' sessions suspended at once) that no event records. A cut link's
// connections are closed on the heal, so clients reconnect afresh.
func TestProxyHealKeepsHealthyConnectionsAndDropsCutOnes(t *testing.T) {
	p, err := newProxy(echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()
	c, err := net.Dial("tcp", p.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	if !roundTrip(c, r) {
		t.Fatal("no echo through the proxy")
	}
	p.setCut(false) // a heal of a link that was not cut
	if !roundTrip(c, r) {
		t.Fatal("healing a link that was not cut broke its connection")
	}
	p.setCut(true)
	if roundTrip(c, r) {
		t.Fatal("bytes crossed a cut link")
	}
	p.setCut(false)
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := r.ReadString('\n'); err == nil {
		t.Fatal("the cut connection was not closed by the heal")
	}
	c2, err := net.Dial("tcp", p.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if !roundTrip(c2, bufio.NewReader(c2)) {
		t.Fatal("no echo through the healed link")
	}
}
