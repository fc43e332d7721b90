package soak

import (
	"net"
	"sync"
)

// proxy forwards TCP connections from a loopback port to one ZooKeeper node. A cut is a black hole, as a
// partition is: connections stay open but nothing crosses, and new ones are accepted and left silent. Healing
// a cut closes every connection (bytes were lost in them) so the client reconnects afresh.
type proxy struct {
	Addr   string
	target string
	ln     net.Listener

	mu    sync.Mutex
	cut   bool
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

func newProxy(target string) (*proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &proxy{Addr: ln.Addr().String(), target: target, ln: ln, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

func (p *proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		cut := p.cut
		p.conns[c] = struct{}{}
		p.mu.Unlock()
		if cut {
			continue // silent until the heal closes it
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns[up] = struct{}{}
		p.mu.Unlock()
		p.wg.Add(2)
		go p.pipe(c, up)
		go p.pipe(up, c)
	}
}

func (p *proxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && !p.isCut() {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				break
			}
		}
		if err != nil {
			break
		}
	}
	dst.Close()
	src.Close()
	p.mu.Lock()
	delete(p.conns, dst)
	delete(p.conns, src)
	p.mu.Unlock()
}

func (p *proxy) isCut() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cut
}

// setCut cuts (true) or heals (false) the link. Healing a cut link closes its connections: bytes were dropped
// mid-stream, so the peer must reconnect. Healing a link that was not cut changes nothing: the nemesis heals
// every link when it ends, and closing healthy connections there would be a fault no event records.
func (p *proxy) setCut(cut bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut && !cut {
		p.dropLocked()
	}
	p.cut = cut
}

// dropLocked closes every connection through the proxy; p.mu is held.
func (p *proxy) dropLocked() {
	for c := range p.conns {
		c.Close()
	}
	p.conns = map[net.Conn]struct{}{}
}

// close stops the proxy and waits for its goroutines.
func (p *proxy) close() {
	p.ln.Close()
	p.mu.Lock()
	p.cut = false
	p.dropLocked()
	p.mu.Unlock()
	p.wg.Wait()
}
