// Package smtptest runs a real SMTP server (github.com/emersion/go-smtp) on loopback for tests: STARTTLS or
// implicit TLS with a certificate made for the test, PLAIN and LOGIN authentication, and the messages it
// received. It is a server speaking SMTP over TCP, not a mock of a client.
package smtptest

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net"
	"sync"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// Message is one message the server accepted.
type Message struct {
	From string
	To   []string
	Data []byte
	// Auth is the mechanism the client authenticated with ("" for none); TLS whether the session was
	// encrypted when the message came.
	Auth string
	TLS  bool
}

// Config configures a Server.
type Config struct {
	// Implicit serves TLS from the first byte (SMTPS); otherwise plain with STARTTLS offered.
	Implicit bool
	// Username and Password are the one account; empty: no AUTH offered.
	Username, Password string
}

// Server is a running SMTP server.
type Server struct {
	Addr    string // 127.0.0.1:port
	CertPEM []byte // the server certificate (self-signed for 127.0.0.1 and localhost): trust it in clients
	Pool    *x509.CertPool
	srv     *smtp.Server
	done    chan struct{}

	mu       sync.Mutex
	messages []Message
	changed  chan struct{}
}

// Start starts a server; Close stops it.
func Start(cfg Config) (*Server, error) {
	cert, certPEM, err := selfSigned()
	if err != nil {
		return nil, err
	}
	s := &Server{CertPEM: certPEM, Pool: x509.NewCertPool(), done: make(chan struct{}), changed: make(chan struct{}, 1)}
	s.Pool.AppendCertsFromPEM(certPEM)
	be := smtp.BackendFunc(func(c *smtp.Conn) (smtp.Session, error) { return &session{s: s, cfg: cfg, c: c}, nil })
	s.srv = smtp.NewServer(be)
	s.srv.Domain = "localhost"
	s.srv.ReadTimeout, s.srv.WriteTimeout = 10*time.Second, 10*time.Second
	s.srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	if cfg.Implicit {
		l = tls.NewListener(l, s.srv.TLSConfig)
	}
	s.Addr = l.Addr().String()
	go func() {
		defer close(s.done)
		_ = s.srv.Serve(l)
	}()
	return s, nil
}

// Close stops the server and waits for it.
func (s *Server) Close() {
	_ = s.srv.Close()
	<-s.done
}

// Messages returns what the server accepted so far.
func (s *Server) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Message(nil), s.messages...)
}

// Wait waits until the server holds n messages, or timeout passes.
func (s *Server) Wait(n int, timeout time.Duration) ([]Message, bool) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		if m := s.Messages(); len(m) >= n {
			return m, true
		}
		select {
		case <-s.changed:
		case <-deadline.C:
			return s.Messages(), false
		}
	}
}

type session struct {
	s    *Server
	cfg  Config
	c    *smtp.Conn
	auth string
	msg  Message
}

var errAuth = &smtp.SMTPError{Code: 535, EnhancedCode: smtp.EnhancedCode{5, 7, 8}, Message: "authentication failed"}

func (ss *session) AuthMechanisms() []string {
	if ss.cfg.Username == "" {
		return nil
	}
	return []string{sasl.Plain, sasl.Login}
}

func (ss *session) Auth(mech string) (sasl.Server, error) {
	check := func(user, pass string) error {
		if user != ss.cfg.Username || pass != ss.cfg.Password {
			return errAuth
		}
		ss.auth = mech
		return nil
	}
	switch mech {
	case sasl.Plain:
		return sasl.NewPlainServer(func(_, user, pass string) error { return check(user, pass) }), nil
	case sasl.Login:
		return &loginServer{check: check}, nil
	}
	return nil, smtp.ErrAuthUnknownMechanism
}

func (ss *session) Mail(from string, _ *smtp.MailOptions) error {
	if ss.cfg.Username != "" && ss.auth == "" {
		return smtp.ErrAuthRequired
	}
	ss.msg = Message{From: from}
	return nil
}

func (ss *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	ss.msg.To = append(ss.msg.To, to)
	return nil
}

func (ss *session) Data(r io.Reader) error {
	var b bytes.Buffer
	if _, err := io.Copy(&b, r); err != nil {
		return err
	}
	_, isTLS := ss.c.TLSConnectionState()
	m := ss.msg
	m.Data, m.Auth, m.TLS = b.Bytes(), ss.auth, isTLS
	ss.s.mu.Lock()
	ss.s.messages = append(ss.s.messages, m)
	ss.s.mu.Unlock()
	select {
	case ss.s.changed <- struct{}{}:
	default:
	}
	return nil
}

func (ss *session) Reset()        { ss.msg = Message{} }
func (ss *session) Logout() error { return nil }

// loginServer is the server side of the LOGIN mechanism (go-sasl has only its client).
type loginServer struct {
	step  int
	user  string
	check func(user, pass string) error
}

func (l *loginServer) Next(response []byte) ([]byte, bool, error) {
	switch l.step {
	case 0:
		l.step++
		if len(response) > 0 { // an initial response is the username
			l.user = string(response)
			l.step++
			return []byte("Password:"), false, nil
		}
		return []byte("Username:"), false, nil
	case 1:
		l.user = string(response)
		l.step++
		return []byte("Password:"), false, nil
	case 2:
		l.step++
		return nil, true, l.check(l.user, string(response))
	}
	return nil, true, errors.New("unexpected LOGIN response")
}

// selfSigned makes a certificate for 127.0.0.1, ::1 and localhost, valid for a day.
func selfSigned() (tls.Certificate, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: "smtptest"},
		NotBefore:    time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1"), net.IPv6loopback}, DNSNames: []string{"localhost"},
		IsCA: true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	cert, err := tls.X509KeyPair(certPEM, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}))
	return cert, certPEM, err
}
