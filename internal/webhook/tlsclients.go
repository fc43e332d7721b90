package webhook

import (
	"container/list"
	"crypto/sha256"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"syscall"

	"github.com/go-resty/resty/v2"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/certs"
)

// DefaultMaxTLSClients bounds the transports kept for jobs' webhook.tls settings (Config.MaxTLSClients).
const DefaultMaxTLSClients = 64

// tlsClients keeps one HTTP client (transport and connection pool) per distinct webhook.tls setting, the
// least recently used dropped (its idle connections closed) past max. Jobs that share a receiver's settings
// share its connections; a job without settings uses the Sender's own client. The key is the settings'
// fingerprint, so the PEMs are parsed once per setting, not per delivery.
type tlsClients struct {
	max  int
	make func(*tls.Config) (*resty.Client, *http.Transport)

	mu      sync.Mutex
	byKey   map[[sha256.Size]byte]*list.Element
	lru     *list.List // of *tlsClient, most recent first
	created int
}

type tlsClient struct {
	key       [sha256.Size]byte
	client    *resty.Client
	transport *http.Transport
}

func newTLSClients(max int, make func(*tls.Config) (*resty.Client, *http.Transport)) *tlsClients {
	if max <= 0 {
		max = DefaultMaxTLSClients
	}
	return &tlsClients{max: max, make: make, byKey: map[[sha256.Size]byte]*list.Element{}, lru: list.New()}
}

// get returns the client for t's settings, making it on first use. Its error (a PEM that does not parse, a
// key that does not match) never quotes the PEMs.
func (c *tlsClients) get(t *ejserver.WebhookTLS) (*resty.Client, error) {
	key := t.Fingerprint()
	c.mu.Lock()
	if el, ok := c.byKey[key]; ok {
		c.lru.MoveToFront(el)
		cl := el.Value.(*tlsClient).client
		c.mu.Unlock()
		return cl, nil
	}
	c.mu.Unlock()
	cfg, err := clientTLS(t)
	if err != nil {
		return nil, err
	}
	client, transport := c.make(cfg)
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byKey[key]; ok { // made meanwhile by another delivery: use that one
		transport.CloseIdleConnections()
		c.lru.MoveToFront(el)
		return el.Value.(*tlsClient).client, nil
	}
	c.byKey[key] = c.lru.PushFront(&tlsClient{key: key, client: client, transport: transport})
	c.created++
	for c.lru.Len() > c.max {
		old := c.lru.Remove(c.lru.Back()).(*tlsClient)
		delete(c.byKey, old.key)
		old.transport.CloseIdleConnections() // requests in flight on it finish; it is then unreferenced
	}
	return client, nil
}

// closeIdle closes the idle connections of every kept transport.
func (c *tlsClients) closeIdle() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for el := c.lru.Front(); el != nil; el = el.Next() {
		el.Value.(*tlsClient).transport.CloseIdleConnections()
	}
}

// stats returns how many clients are kept and how many were made since start.
func (c *tlsClients) stats() (kept, created int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len(), c.created
}

// clientTLS is the tls.Config of a webhook.tls setting: TLS 1.2 or later, the receiver verified against
// CAPem (else the system's roots) under ServerName (else the URL's host), the client certificate presented
// when asked for.
func clientTLS(t *ejserver.WebhookTLS) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: certs.MinVersion, ServerName: t.ServerName}
	if t.CAPem != "" {
		pool, err := certs.ParsePool([]byte(t.CAPem))
		if err != nil {
			return nil, fmt.Errorf("webhook.tls.caPem: %v", err)
		}
		cfg.RootCAs = pool
	}
	if t.ClientCertPem != "" || t.ClientKeyPem != "" {
		pair, err := certs.ParseKeyPair([]byte(t.ClientCertPem), []byte(t.ClientKeyPem))
		if err != nil {
			return nil, fmt.Errorf("webhook.tls client certificate: %v", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

// closedAfterHandshakeHint explains a connection closed right after a TLS handshake that had succeeded: under
// TLS 1.3 the client's handshake ends before the server has checked the client's certificate, so a receiver
// that refuses it (or requires one) may close the connection before its alert is read.
const closedAfterHandshakeHint = " (the receiver closed the connection right after the TLS handshake: " +
	"under TLS 1.3 that is how a receiver refusing or requiring a client certificate can show; see webhook.tls)"

// closedAfterHandshake reports whether err is the peer closing the connection (no alert read), as a write or
// a read sees it, or as HTTP/2's set-up reports it (net/http does not export that error).
func closedAfterHandshake(err error) bool {
	return errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrUnexpectedEOF) || strings.Contains(err.Error(), "http2: client conn could not be established")
}
