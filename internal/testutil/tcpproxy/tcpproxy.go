// Package tcpproxy is a loopback TCP proxy for fault tests: a client reaches its server (ZooKeeper, mostly)
// through it, and the test breaks the link in one of three ways, then heals it.
//
//	Cut      a black hole, as a partition is: connections stay open but nothing crosses, and new ones are
//	         accepted and left silent. Heal closes every connection (bytes were lost in them).
//	Refuse   every connection is closed, and new ones are closed as soon as they are accepted, until Heal.
//	Drop     every connection is closed, and new ones are held (accepted, not connected) for the hold or until
//	         Heal, then connected, as a network heal that resets connections does.
//
// Heal of a link that is not cut closes nothing: a test that heals every link at its end must not make the
// heal itself a fault.
package tcpproxy

import (
	"net"
	"sync"
	"time"
)

// mode is how the proxy treats traffic: open, a black hole, or refusing new connections.
type mode int

const (
	open mode = iota
	blackHole
	refusing
)

// Proxy forwards TCP connections from a loopback port to one target address.
type Proxy struct {
	target string
	ln     net.Listener

	mu        sync.Mutex
	mode      mode
	holdUntil time.Time     // new connections wait until then (a drop's hold)
	release   chan struct{} // closed by Heal or Close: held connections stop waiting
	closed    bool
	conns     map[net.Conn]struct{}
	wg        sync.WaitGroup
}

// New listens on a loopback port and forwards what it accepts to target until Close.
func New(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{target: target, ln: ln, release: make(chan struct{}), conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the address clients dial.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.mode == refusing || p.closed {
			p.mu.Unlock()
			c.Close()
			continue
		}
		p.conns[c] = struct{}{}
		wait, release := time.Until(p.holdUntil), p.release
		p.mu.Unlock()
		p.wg.Add(1)
		go p.serve(c, wait, release)
	}
}

// serve connects c to the target after wait (a drop's hold; Heal or Close ends it early) and copies both
// ways until either side ends. While the link is a black hole, c is left silent until a heal closes it.
func (p *Proxy) serve(c net.Conn, wait time.Duration, release <-chan struct{}) {
	defer p.wg.Done()
	if wait > 0 {
		timer := time.NewTimer(wait) // the fault's length, not a wait for something to happen
		select {
		case <-timer.C:
		case <-release:
			timer.Stop()
		}
	}
	p.mu.Lock()
	_, live := p.conns[c] // a drop, refusal or close during the hold closed c
	silent := p.mode == blackHole
	p.mu.Unlock()
	if !live || silent {
		return // closed already, or silent until the heal closes it
	}
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		p.forget(c)
		return
	}
	p.mu.Lock()
	_, live = p.conns[c]
	if live {
		p.conns[up] = struct{}{}
	}
	p.mu.Unlock()
	if !live {
		up.Close()
		return
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		p.pipe(up, c)
	}()
	p.pipe(c, up)
}

// pipe copies src to dst until either ends, dropping what it reads while the link is a black hole, then
// closes both.
func (p *Proxy) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && !p.isBlackHole() {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				break
			}
		}
		if err != nil {
			break
		}
	}
	p.forget(dst)
	p.forget(src)
}

func (p *Proxy) isBlackHole() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mode == blackHole
}

// forget closes c and stops tracking it.
func (p *Proxy) forget(c net.Conn) {
	c.Close()
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

// Cut makes the link a black hole until Heal: connections stay open but nothing crosses, and new ones are
// accepted and left silent.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mode = blackHole
}

// Refuse closes every connection and closes new ones as soon as they are accepted, until Heal.
func (p *Proxy) Refuse() {
	p.mu.Lock()
	p.mode = refusing
	conns := p.takeLocked()
	p.mu.Unlock()
	closeAll(conns)
}

// Drop closes every connection and holds new ones for hold (or until Heal) before connecting them.
func (p *Proxy) Drop(hold time.Duration) { DropAll(hold, p) }

// DropAll drops every connection of the proxies at one moment and holds new ones for hold. The connections
// are taken from all of them before any is closed: a client whose connection to one closes may reconnect to
// another at once, and closing that fresh connection too would be another fault.
func DropAll(hold time.Duration, proxies ...*Proxy) {
	var conns []net.Conn
	for _, p := range proxies {
		p.mu.Lock()
		conns = append(conns, p.takeLocked()...)
		p.holdUntil = time.Now().Add(hold)
		p.mu.Unlock()
	}
	closeAll(conns)
}

// Heal opens the link. Healing a black hole closes its connections (bytes were dropped mid-stream, so the
// client must reconnect); a refusal or a drop's hold ends, and held connections are connected now. Healing a
// link that was not broken changes nothing.
func (p *Proxy) Heal() {
	p.mu.Lock()
	var conns []net.Conn
	if p.mode == blackHole {
		conns = p.takeLocked()
	}
	p.mode = open
	if !p.closed && time.Now().Before(p.holdUntil) {
		p.holdUntil = time.Time{}
		close(p.release)
		p.release = make(chan struct{})
	}
	p.mu.Unlock()
	closeAll(conns)
}

// Close stops the proxy, closes every connection and waits for its goroutines. It is safe twice.
func (p *Proxy) Close() {
	p.ln.Close()
	p.mu.Lock()
	if !p.closed {
		p.closed = true
		close(p.release)
	}
	conns := p.takeLocked()
	p.mu.Unlock()
	closeAll(conns)
	p.wg.Wait()
}

// takeLocked empties the set of connections and returns them, to be closed once p.mu is released.
func (p *Proxy) takeLocked() []net.Conn {
	conns := make([]net.Conn, 0, len(p.conns))
	for c := range p.conns {
		conns = append(conns, c)
	}
	p.conns = map[net.Conn]struct{}{}
	return conns
}

func closeAll(conns []net.Conn) {
	for _, c := range conns {
		c.Close()
	}
}
