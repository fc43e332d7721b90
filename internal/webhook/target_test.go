package webhook

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"

	"golang.org/x/net/dns/dnsmessage"
)

func TestParseAllowList(t *testing.T) {
	tests := []struct {
		in, want string // want: String() of the result, or "error"
	}{
		{"", ""},
		{" hooks.example.com , *.Example.ORG., 10.0.0.0/8,192.168.1.7 , ::1, [fd00::1], fd00:ab::/32",
			"hooks.example.com,*.example.org,10.0.0.0/8,192.168.1.7,::1,fd00::1,fd00:ab::/32"},
		{"10.1.2.3/8", "10.0.0.0/8"}, // masked
		{"::ffff:10.0.0.1", "10.0.0.1"},
		{"localhost", "localhost"},
		{"10.0.0.0/33", "error"},
		{"*.", "error"},
		{"*", "error"},
		{"http://example.com", "error"},
		{"example.com:8080", "error"},
		{"fe80::1%eth0", "error"},
		{"bad host", "error"},
	}
	for _, tt := range tests {
		p, err := ParseAllowList(tt.in)
		got := "error"
		if err == nil {
			got = p.String()
		}
		if got != tt.want {
			t.Errorf("ParseAllowList(%q) = %q (%v), want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestCheckURL(t *testing.T) {
	mustPolicy := func(s string) *TargetPolicy {
		p, err := ParseAllowList(s)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	open := (*TargetPolicy)(nil)
	names := mustPolicy("hooks.example.com,*.svc.example.com")
	loopOnly := mustPolicy("127.0.0.1")
	withNets := mustPolicy("hooks.example.com,10.0.0.0/8")
	linkLocalAllowed := mustPolicy("169.254.10.0/24")
	tests := []struct {
		policy *TargetPolicy
		url    string
		refuse string // "" = allowed
	}{
		{open, "https://hooks.example.com/settle", ""},
		{open, "http://127.0.0.1:9090/", ""},
		{open, "http://localhost:9090/", ""},
		{open, "http://10.1.2.3/", ""},
		{open, "http://[::1]:9090/", ""},
		{open, "ftp://example.com/", "scheme must be http or https"},
		{open, "file:///etc/passwd", "scheme must be http or https"},
		{open, "http:///nohost", "no host"},
		{open, "http://bob:pw@example.com/", "credentials"},
		{open, "http://169.254.169.254/latest/meta-data/", "link-local"},
		{open, "http://[fe80::1]/", "link-local"},
		{open, "http://[::ffff:169.254.169.254]/", "link-local"},
		{open, "http://100.100.100.200/", "Alibaba"},
		{open, "http://[fd00:ec2::254]/", "AWS"},
		{open, "http://168.63.129.16/", "Azure"},
		{open, "http://0.0.0.0:8080/", "unspecified"},
		{open, "http://[::]:8080/", "unspecified"},
		{open, "http://224.0.0.1/", "multicast"},
		{open, "http://metadata.google.internal/computeMetadata/v1/", "metadata"},
		{open, "http://METADATA.GOOGLE.INTERNAL./", "metadata"},
		{names, "https://hooks.example.com/", ""},
		{names, "https://HOOKS.example.com./", ""},
		{names, "https://a.svc.example.com/", ""},
		{names, "https://a.b.svc.example.com/", ""},
		{names, "https://svc.example.com/", "not in the operator's allow-list"},
		{names, "https://example.com/", "not in the operator's allow-list"},
		{names, "https://evilhooks.example.com/", "not in the operator's allow-list"},
		{names, "http://127.0.0.1:9090/", "not in the operator's allow-list"},
		{loopOnly, "http://127.0.0.1:9090/", ""},
		{loopOnly, "http://127.0.0.2:9090/", "not in the operator's allow-list"},
		{names, "http://169.254.169.254/", "link-local"},
		{withNets, "http://10.9.9.9/", ""},
		{withNets, "http://11.0.0.1/", "not in the operator's allow-list"},
		{withNets, "http://internal.corp/", ""}, // may resolve into 10/8: checked when dialling
		{linkLocalAllowed, "http://169.254.10.5/", ""},
		{linkLocalAllowed, "http://169.254.169.254/", "link-local"},
	}
	for _, tt := range tests {
		u, err := url.Parse(tt.url)
		if err != nil {
			t.Fatal(err)
		}
		err = tt.policy.CheckURL(u)
		switch {
		case tt.refuse == "" && err != nil:
			t.Errorf("[%s] %s: refused: %v", tt.policy, tt.url, err)
		case tt.refuse != "" && (err == nil || !strings.Contains(err.Error(), tt.refuse) || !errors.Is(err, ErrTargetRefused)):
			t.Errorf("[%s] %s: err = %v, want one saying %q", tt.policy, tt.url, err, tt.refuse)
		}
	}
}

// fakeDNS answers A queries from a table it lets tests change (to play DNS rebinding); other names get
// NXDOMAIN, AAAA queries an empty answer.
type fakeDNS struct {
	pc   net.PacketConn
	done chan struct{}
	mu   sync.Mutex
	a    map[string]netip.Addr // "name.test." -> address
}

func startFakeDNS(t *testing.T) *fakeDNS {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeDNS{pc: pc, done: make(chan struct{}), a: map[string]netip.Addr{}}
	go f.serve()
	t.Cleanup(func() {
		_ = pc.Close()
		<-f.done
	})
	return f
}

func (f *fakeDNS) set(name, addr string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.a[name+"."] = netip.MustParseAddr(addr)
}

func (f *fakeDNS) serve() {
	defer close(f.done)
	buf := make([]byte, 512)
	for {
		n, from, err := f.pc.ReadFrom(buf)
		if err != nil {
			return
		}
		var p dnsmessage.Parser
		hdr, err := p.Start(buf[:n])
		if err != nil {
			continue
		}
		q, err := p.Question()
		if err != nil {
			continue
		}
		f.mu.Lock()
		addr, known := f.a[strings.ToLower(q.Name.String())]
		f.mu.Unlock()
		rh := dnsmessage.Header{ID: hdr.ID, Response: true, Authoritative: true, RCode: dnsmessage.RCodeSuccess}
		if !known {
			rh.RCode = dnsmessage.RCodeNameError
		}
		b := dnsmessage.NewBuilder(nil, rh)
		b.EnableCompression()
		_ = b.StartQuestions()
		_ = b.Question(q)
		_ = b.StartAnswers()
		if known && q.Type == dnsmessage.TypeA {
			_ = b.AResource(dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 0},
				dnsmessage.AResource{A: addr.As4()})
		}
		msg, err := b.Finish()
		if err == nil {
			_, _ = f.pc.WriteTo(msg, from)
		}
	}
}

func (f *fakeDNS) resolver() *net.Resolver {
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", f.pc.LocalAddr().String())
	}}
}

func TestTargetPolicyAtDialTime(t *testing.T) {
	dns := startFakeDNS(t)
	rec := newRecorder(t, status(200))
	_, port, _ := net.SplitHostPort(rec.Listener.Addr().String())
	urlFor := func(host string) string { return "http://" + host + ":" + port + "/hook" }
	sender := func(allow string) *Sender {
		p, err := ParseAllowList(allow)
		if err != nil {
			t.Fatal(err)
		}
		s, _ := newTestSender(t, Config{Allow: p, Resolver: dns.resolver()})
		return s
	}

	t.Run("a name resolving to the metadata address is refused before connecting", func(t *testing.T) {
		dns.set("meta.test", "169.254.169.254")
		d := testDelivery(urlFor("meta.test"))
		res := sender("").Deliver(context.Background(), d)
		if res.Success || !res.Permanent || res.Attempts != 1 ||
			!strings.Contains(res.FailureCause, "meta.test resolves to 169.254.169.254, a link-local") {
			t.Fatalf("result = %+v", res)
		}
	})
	t.Run("DNS rebinding: allowed, then re-bound to a refused address", func(t *testing.T) {
		s := sender("")
		dns.set("rebind.test", "127.0.0.1")
		before := rec.count()
		if res := s.Deliver(context.Background(), testDelivery(urlFor("rebind.test"))); !res.Success {
			t.Fatalf("first delivery: %+v", res)
		}
		dns.set("rebind.test", "169.254.169.254")
		s.Close() // drop the pooled connection so the next request dials (and resolves) again
		u, _ := url.Parse(urlFor("rebind.test"))
		if err := (*TargetPolicy)(nil).CheckURL(u); err != nil {
			t.Fatalf("the static check cannot know: %v", err)
		}
		res := s.Deliver(context.Background(), testDelivery(urlFor("rebind.test")))
		if res.Success || !res.Permanent || !strings.Contains(res.FailureCause, "169.254.169.254") {
			t.Fatalf("after rebinding: %+v", res)
		}
		if got := rec.count() - before; got != 1 {
			t.Fatalf("the receiver saw %d requests, want 1", got)
		}
	})
	t.Run("allow-list by name suffix", func(t *testing.T) {
		s := sender("*.hooks.test")
		dns.set("a.hooks.test", "127.0.0.1")
		dns.set("other.test", "127.0.0.1")
		if res := s.Deliver(context.Background(), testDelivery(urlFor("a.hooks.test"))); !res.Success {
			t.Fatalf("listed name: %+v", res)
		}
		res := s.Deliver(context.Background(), testDelivery(urlFor("other.test")))
		if res.Success || !res.Permanent || res.Attempts != 0 || !strings.Contains(res.FailureCause, "allow-list") {
			t.Fatalf("unlisted name: %+v", res)
		}
	})
	t.Run("a listed name still may not reach a refused address", func(t *testing.T) {
		dns.set("evil.hooks.test", "169.254.169.254")
		res := sender("*.hooks.test").Deliver(context.Background(), testDelivery(urlFor("evil.hooks.test")))
		if res.Success || !res.Permanent || !strings.Contains(res.FailureCause, "link-local") {
			t.Fatalf("result = %+v", res)
		}
	})
	t.Run("allow-list by CIDR is checked on the resolved address", func(t *testing.T) {
		dns.set("loop.test", "127.0.0.1")
		res := sender("10.0.0.0/8").Deliver(context.Background(), testDelivery(urlFor("loop.test")))
		if res.Success || !res.Permanent || res.Attempts != 1 ||
			!strings.Contains(res.FailureCause, "loop.test (127.0.0.1) is not in the operator's allow-list") {
			t.Fatalf("result = %+v", res)
		}
		if res := sender("127.0.0.0/8").Deliver(context.Background(), testDelivery(urlFor("loop.test"))); !res.Success {
			t.Fatalf("CIDR that covers it: %+v", res)
		}
	})
}

func TestCheckIP(t *testing.T) {
	p, err := ParseAllowList("169.254.169.254,fe80::/10")
	if err != nil {
		t.Fatal(err)
	}
	for _, ip := range []string{"169.254.169.254", "fe80::1", "::ffff:169.254.169.254"} {
		if err := p.checkIP("x", netip.MustParseAddr(ip), false); err != nil {
			t.Errorf("explicitly allowed %s: %v", ip, err)
		}
	}
	if err := p.checkIP("x", netip.MustParseAddr("169.254.1.1"), true); err == nil {
		t.Error("169.254.1.1 is not covered by the allow-list entry")
	}
}

// FuzzParseAllowList: never panics, and what it accepts prints back to an equivalent list.
func FuzzParseAllowList(f *testing.F) {
	for _, s := range []string{"", "hooks.example.com,*.example.org,10.0.0.0/8,::1", "[fd00::1],169.254.0.0/16", "*.", "a..b", "1.2.3.4/40"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParseAllowList(s)
		if err != nil {
			return
		}
		again, err := ParseAllowList(p.String())
		if err != nil || again.String() != p.String() {
			t.Fatalf("ParseAllowList(%q).String() = %q does not parse back the same: %q, %v", s, p.String(), again.String(), err)
		}
	})
}
