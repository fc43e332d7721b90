package notify

import (
	"context"
	"crypto/tls"
	"mime"
	"net"
	"net/mail"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ejserver/ejserver/internal/testutil/smtptest"
)

func emailChannel(srv *smtptest.Server, mode, auth, password string) Channel {
	host, port, _ := net.SplitHostPort(srv.Addr)
	p, _ := strconv.Atoi(port)
	c := Channel{Name: "mail", Kind: ChannelEmail, TimeoutMs: 5000, MaxAttempts: 1, Email: &EmailSettings{
		Host: host, Port: p, TLS: mode, Auth: auth, From: "ejserver <alerts@example.com>",
		To: []string{"ops@example.com", "Dev Team <dev@example.com>"}}}
	if password != "" {
		c.Email.Username, c.Email.Password = "alerts", &password
	}
	return c
}

// TestEmailOverRealSMTP sends through a real SMTP server: STARTTLS and implicit TLS, PLAIN and LOGIN, and
// a wrong password fails for good (535) without a retry.
func TestEmailOverRealSMTP(t *testing.T) {
	tests := []struct {
		name, mode, auth string
		implicit         bool
	}{
		{"starttls-plain", TLSStartTLS, "plain", false},
		{"starttls-login", TLSStartTLS, "login", false},
		{"implicit-plain", TLSImplicit, "plain", true},
		{"implicit-login", TLSImplicit, "login", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv, err := smtptest.Start(smtptest.Config{Implicit: tc.implicit, Username: "alerts", Password: "s3cret-pw"})
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			d := NewDispatcher(DispatcherConfig{Channels: channelMap{}, TLS: &tls.Config{RootCAs: srv.Pool, MinVersion: tls.VersionTLS12}})
			defer d.Stop()
			n := note("0b7c8c1e-5d0f-4d7e-9d7a-1e0c2b1a9f00")
			n.Title = "Job settle: 3 of 4 items failed — Überweisung"
			res := d.Test(context.Background(), emailChannel(srv, tc.mode, tc.auth, "s3cret-pw"), n)
			if res.Outcome != OutcomeSent {
				t.Fatalf("result %+v", res)
			}
			msgs, ok := srv.Wait(1, 5*time.Second)
			if !ok {
				t.Fatal("no message arrived")
			}
			m := msgs[0]
			if m.From != "alerts@example.com" || strings.Join(m.To, ",") != "ops@example.com,dev@example.com" ||
				!m.TLS || m.Auth != strings.ToUpper(tc.auth) {
				t.Fatalf("envelope %+v", m)
			}
			pm, err := mail.ReadMessage(strings.NewReader(string(m.Data)))
			if err != nil {
				t.Fatal(err)
			}
			subject, _ := new(mime.WordDecoder).DecodeHeader(pm.Header.Get("Subject"))
			if subject != "[ejserver] "+n.Title || pm.Header.Get("Message-ID") != "<0b7c8c1e-5d0f-4d7e-9d7a-1e0c2b1a9f00@ns.ejserver>" {
				t.Fatalf("headers %v (subject %q)", pm.Header, subject)
			}
		})
	}
	t.Run("wrong password", func(t *testing.T) {
		srv, err := smtptest.Start(smtptest.Config{Username: "alerts", Password: "right"})
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Close()
		d := NewDispatcher(DispatcherConfig{Channels: channelMap{}, TLS: &tls.Config{RootCAs: srv.Pool, MinVersion: tls.VersionTLS12},
			InitialBackoff: time.Millisecond})
		defer d.Stop()
		c := emailChannel(srv, TLSStartTLS, "plain", "wrong-pw")
		c.MaxAttempts = 5
		res := d.Test(context.Background(), c, note("n"))
		if res.Outcome != OutcomeFailed || !strings.Contains(res.Error, "535") || strings.Contains(res.Error, "wrong-pw") {
			t.Fatalf("result %+v", res)
		}
		res = d.send(context.Background(), c, note("n"), false)
		if res.Attempts != 1 {
			t.Fatalf("a 535 was retried: %+v", res)
		}
	})
	t.Run("untrusted certificate", func(t *testing.T) {
		srv, err := smtptest.Start(smtptest.Config{Username: "alerts", Password: "pw"})
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Close()
		d := NewDispatcher(DispatcherConfig{Channels: channelMap{}})
		defer d.Stop()
		res := d.Test(context.Background(), emailChannel(srv, TLSStartTLS, "plain", "pw"), note("n"))
		if res.Outcome != OutcomeFailed || !strings.Contains(res.Error, "certificate") || len(srv.Messages()) != 0 {
			t.Fatalf("result %+v", res)
		}
	})
}
