package notify

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/mail"
	"net/smtp"
	"net/textproto"
	"strconv"
	"strings"
	"time"
)

func addrOf(s string) string {
	if a, err := mail.ParseAddress(s); err == nil {
		return a.Address
	}
	return s
}

func addrsOf(list []string) []string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = addrOf(s)
	}
	return out
}

// DialFunc connects to a host (the operator's target policy is applied there).
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// smtpError is an SMTP failure; permanent for a 5xx reply (retrying will not help), else retried.
type smtpError struct {
	step      string
	err       error
	permanent bool
}

func (e *smtpError) Error() string { return e.step + ": " + e.err.Error() }
func (e *smtpError) Unwrap() error { return e.err }

// sendMail submits msg over SMTP: implicit TLS or STARTTLS (required: no silent fall-back to clear text),
// PLAIN or LOGIN auth, bounded by ctx's deadline on every read and write.
func sendMail(ctx context.Context, dial DialFunc, tlsBase *tls.Config, s *EmailSettings, msg Message) error {
	port := s.Port
	if port == 0 {
		port = map[string]int{TLSImplicit: 465, TLSNone: 25}[s.TLS]
		if port == 0 {
			port = 587
		}
	}
	addr := net.JoinHostPort(s.Host, strconv.Itoa(port))
	conn, err := dial(ctx, "tcp", addr)
	if err != nil {
		return &smtpError{step: "connect", err: err}
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) }) // cancellation ends I/O
	defer stop()
	tcfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if tlsBase != nil {
		tcfg = tlsBase.Clone()
	}
	tcfg.ServerName = s.Host
	if s.TLS == TLSImplicit {
		tc := tls.Client(conn, tcfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			return &smtpError{step: "TLS handshake", err: err}
		}
		conn = tc
	}
	c, err := smtp.NewClient(conn, s.Host)
	if err != nil {
		return classifySMTP("greeting", err)
	}
	defer c.Close()
	if err := c.Hello("ejserver"); err != nil {
		return classifySMTP("EHLO", err)
	}
	if s.TLS == TLSStartTLS || s.TLS == "" {
		if ok, _ := c.Extension("STARTTLS"); !ok {
			return &smtpError{step: "STARTTLS", err: errors.New("the server does not offer STARTTLS (set email.tls to tls for implicit TLS)"), permanent: true}
		}
		if err := c.StartTLS(tcfg); err != nil {
			return classifySMTP("STARTTLS", err)
		}
	}
	if s.Username != "" {
		var a smtp.Auth
		if s.Auth == "login" {
			a = &loginAuth{user: s.Username, pass: str(s.Password), host: s.Host}
		} else {
			a = smtp.PlainAuth("", s.Username, str(s.Password), s.Host)
		}
		if ok, _ := c.Extension("AUTH"); !ok {
			return &smtpError{step: "AUTH", err: errors.New("the server offers no AUTH"), permanent: true}
		}
		if err := c.Auth(a); err != nil {
			return classifySMTP("AUTH", err)
		}
	}
	if err := c.Mail(msg.From); err != nil {
		return classifySMTP("MAIL FROM", err)
	}
	for _, to := range msg.To {
		if err := c.Rcpt(to); err != nil {
			return classifySMTP("RCPT TO "+to, err)
		}
	}
	w, err := c.Data()
	if err != nil {
		return classifySMTP("DATA", err)
	}
	if _, err := w.Write(msg.Data); err != nil {
		return classifySMTP("DATA", err)
	}
	if err := w.Close(); err != nil {
		return classifySMTP("end of DATA", err)
	}
	_ = c.Quit()
	return nil
}

func classifySMTP(step string, err error) error {
	var te *textproto.Error
	if errors.As(err, &te) {
		return &smtpError{step: step, err: fmt.Errorf("%d %s", te.Code, te.Msg), permanent: te.Code >= 500}
	}
	return &smtpError{step: step, err: err}
}

// loginAuth is the LOGIN SASL mechanism (username and password, each base64 in answer to a challenge), which
// net/smtp lacks. Like PlainAuth it refuses to send the password without TLS except to a loopback host.
type loginAuth struct{ user, pass, host string }

func (a *loginAuth) Start(server *smtp.ServerInfo) (string, []byte, error) {
	if !server.TLS && !loopbackHost(server.Name) {
		return "", nil, errors.New("unencrypted connection: LOGIN auth refused")
	}
	if server.Name != a.host {
		return "", nil, errors.New("wrong host name")
	}
	return "LOGIN", nil, nil
}

func (a *loginAuth) Next(fromServer []byte, more bool) ([]byte, error) {
	if !more {
		return nil, nil
	}
	switch q := strings.ToLower(strings.TrimSpace(string(fromServer))); {
	case strings.HasPrefix(q, "user"):
		return []byte(a.user), nil
	case strings.HasPrefix(q, "pass"):
		return []byte(a.pass), nil
	}
	return nil, fmt.Errorf("unexpected LOGIN challenge %q", fromServer)
}
