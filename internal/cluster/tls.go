package cluster

import (
	"context"
	"crypto/tls"
	"net"
	"time"
)

// tlsDialer is go-zookeeper's dialer for a secure client port: TCP, then a TLS handshake bounded by the same
// timeout, the server's certificate checked against the name of the host dialed unless cfg names one.
func tlsDialer(cfg *tls.Config) func(network, address string, timeout time.Duration) (net.Conn, error) {
	return func(network, address string, timeout time.Duration) (net.Conn, error) {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		d := tls.Dialer{NetDialer: &net.Dialer{Timeout: timeout}, Config: ServerTLS(cfg, address)}
		return d.DialContext(ctx, network, address)
	}
}

// ServerTLS is cfg for one ZooKeeper server: its certificate is checked against cfg.ServerName, else the
// host of address (a name or an IP).
func ServerTLS(cfg *tls.Config, address string) *tls.Config {
	c := cfg.Clone()
	if c.ServerName == "" {
		if host, _, err := net.SplitHostPort(address); err == nil {
			c.ServerName = host
		}
	}
	return c
}

// ProbeTLS makes one TLS handshake with each server in turn until one completes: nil then, or when no server
// could be reached at all (the session's own retries take over). A handshake that fails (an untrusted or
// misnamed certificate, a refused client certificate, a port that does not speak TLS) is returned at once,
// so a wrong setting stops the start instead of being retried in the background forever.
func ProbeTLS(ctx context.Context, servers []string, cfg *tls.Config) error {
	for _, addr := range servers {
		d := tls.Dialer{NetDialer: &net.Dialer{Timeout: 5 * time.Second}, Config: ServerTLS(cfg, addr)}
		tcp, err := d.NetDialer.DialContext(ctx, "tcp", addr)
		if err != nil {
			continue // not reachable: not a TLS problem
		}
		conn := tls.Client(tcp, d.Config)
		hctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err = conn.HandshakeContext(hctx)
		cancel()
		conn.Close()
		if err != nil {
			return &TLSError{Server: addr, Err: err}
		}
		return nil
	}
	return nil
}

// TLSError is a failed TLS handshake with a ZooKeeper server.
type TLSError struct {
	Server string
	Err    error
}

func (e *TLSError) Error() string {
	return "TLS handshake with ZooKeeper " + e.Server + ": " + e.Err.Error()
}
func (e *TLSError) Unwrap() error { return e.Err }
