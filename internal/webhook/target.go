package webhook

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"syscall"
)

// ErrTargetRefused matches (errors.Is) every error that refuses a webhook target.
var ErrTargetRefused = errors.New("webhook target refused")

// RefusedError is the policy's refusal of a target. Its message is fit to show to the job's owner.
type RefusedError struct {
	Reason string
}

func (e *RefusedError) Error() string { return ErrTargetRefused.Error() + ": " + e.Reason }

// Is makes errors.Is(err, ErrTargetRefused) true.
func (e *RefusedError) Is(target error) bool { return target == ErrTargetRefused }

func refused(format string, args ...any) error {
	return &RefusedError{Reason: fmt.Sprintf(format, args...)}
}

// TargetPolicy says which webhook targets a peer may call. The zero value and nil allow any http/https
// host except link-local and cloud-metadata addresses. An allow-list (operator flag --webhook-allow) limits
// targets to the hosts and networks it names; an IP or CIDR entry also admits addresses that are otherwise
// refused (for example 169.254.0.0/16 for a link-local receiver).
//
// The policy is enforced twice: statically on the URL (CheckURL, at job create and before each request) and
// at dial time on every resolved IP address, so a DNS name that resolves (or re-binds) to a refused address
// is refused before a packet is sent.
type TargetPolicy struct {
	names    []string       // exact host names, lower case, no trailing dot
	suffixes []string       // ".example.com" from "*.example.com"
	prefixes []netip.Prefix // IPs (as /32 or /128) and CIDRs
}

// refusedPrefixes are never dialled unless an allow-list IP or CIDR entry covers them.
var refusedPrefixes = []struct {
	prefix netip.Prefix
	why    string
}{
	{netip.MustParsePrefix("169.254.0.0/16"), "link-local (cloud metadata lives here)"},
	{netip.MustParsePrefix("fe80::/10"), "link-local"},
	{netip.MustParsePrefix("fd00:ec2::254/128"), "cloud metadata (AWS IPv6)"},
	{netip.MustParsePrefix("100.100.100.200/32"), "cloud metadata (Alibaba Cloud)"},
	{netip.MustParsePrefix("168.63.129.16/32"), "cloud platform endpoint (Azure)"},
	{netip.MustParsePrefix("192.0.0.192/32"), "cloud metadata (Oracle Cloud)"},
	{netip.MustParsePrefix("0.0.0.0/8"), "unspecified"},
	{netip.MustParsePrefix("::/128"), "unspecified"},
	{netip.MustParsePrefix("224.0.0.0/4"), "multicast"},
	{netip.MustParsePrefix("ff00::/8"), "multicast"},
	{netip.MustParsePrefix("255.255.255.255/32"), "broadcast"},
}

// refusedNames are metadata host names refused statically (they resolve to refused addresses anyway).
var refusedNames = []string{"metadata.google.internal", "metadata.goog"}

// ParseAllowList parses the operator's allow-list: comma-separated entries, each a host name
// ("hooks.example.com"), a suffix pattern ("*.example.com": any name ending ".example.com", not
// example.com itself), an IP address ("10.0.0.7", "::1") or a CIDR ("10.0.0.0/8"). An empty string gives
// the default policy (any host but refused addresses).
func ParseAllowList(s string) (*TargetPolicy, error) {
	p := &TargetPolicy{}
	for entry := range strings.SplitSeq(s, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		if strings.Contains(entry, "/") {
			pfx, err := netip.ParsePrefix(entry)
			if err != nil {
				return nil, fmt.Errorf("webhook allow-list entry %q: not a valid CIDR", entry)
			}
			p.prefixes = append(p.prefixes, pfx.Masked())
			continue
		}
		if ip, err := netip.ParseAddr(strings.Trim(entry, "[]")); err == nil {
			if ip.Zone() != "" {
				return nil, fmt.Errorf("webhook allow-list entry %q: IP zones are not supported", entry)
			}
			ip = ip.Unmap()
			p.prefixes = append(p.prefixes, netip.PrefixFrom(ip, ip.BitLen()))
			continue
		}
		name := normalizeHost(entry)
		if rest, ok := strings.CutPrefix(name, "*."); ok {
			if !validHostname(rest) {
				return nil, fmt.Errorf("webhook allow-list entry %q: not a valid host pattern", entry)
			}
			p.suffixes = append(p.suffixes, "."+rest)
			continue
		}
		if !validHostname(name) {
			return nil, fmt.Errorf("webhook allow-list entry %q: not a host name, *.suffix, IP or CIDR", entry)
		}
		p.names = append(p.names, name)
	}
	return p, nil
}

// String returns the allow-list in ParseAllowList's syntax ("" for the default policy).
func (p *TargetPolicy) String() string {
	if p == nil {
		return ""
	}
	var out []string
	out = append(out, p.names...)
	for _, s := range p.suffixes {
		out = append(out, "*"+s)
	}
	for _, pfx := range p.prefixes {
		if pfx.IsSingleIP() {
			out = append(out, pfx.Addr().String())
		} else {
			out = append(out, pfx.String())
		}
	}
	return strings.Join(out, ",")
}

// restricted reports whether an allow-list limits targets.
func (p *TargetPolicy) restricted() bool {
	return p != nil && (len(p.names) > 0 || len(p.suffixes) > 0 || len(p.prefixes) > 0)
}

// CheckURL checks a webhook URL without resolving it: scheme http or https, a host, no user:password, and a
// host the policy admits. A host name that no name entry matches passes only if the allow-list has IP/CIDR
// entries: whether it resolves into them is checked when dialling. Errors wrap ErrTargetRefused and are
// fit to show to the user who wrote the URL.
func (p *TargetPolicy) CheckURL(u *url.URL) error {
	if u == nil {
		return refused("no URL")
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return refused("scheme must be http or https, not %q", u.Scheme)
	}
	if u.User != nil {
		return refused("credentials in the URL are not allowed (send them in a header)")
	}
	host := u.Hostname()
	if host == "" {
		return refused("the URL has no host")
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		if ip.Zone() != "" {
			return refused("IPv6 zones are not allowed")
		}
		return p.checkIP(host, ip, false)
	}
	name := normalizeHost(host)
	if slices.Contains(refusedNames, name) && !p.nameListed(name) {
		return refused("%s is a cloud metadata service", name)
	}
	if p.restricted() && !p.nameListed(name) && len(p.prefixes) == 0 {
		return refused("host %s is not in the operator's allow-list (--webhook-allow)", name)
	}
	return nil
}

// nameListed reports whether an allow-list name or suffix entry matches the normalised host name.
func (p *TargetPolicy) nameListed(name string) bool {
	if p == nil {
		return false
	}
	if slices.Contains(p.names, name) {
		return true
	}
	for _, s := range p.suffixes {
		if strings.HasSuffix(name, s) {
			return true
		}
	}
	return false
}

// checkIP decides on one address that host resolved to (or is). nameListed says whether the host name
// matched a name entry: it admits ordinary addresses but never a refused one.
func (p *TargetPolicy) checkIP(host string, ip netip.Addr, nameListed bool) error {
	ip = ip.Unmap().WithZone("")
	if p != nil {
		for _, pfx := range p.prefixes {
			if pfx.Contains(ip) {
				return nil
			}
		}
	}
	for _, r := range refusedPrefixes {
		if r.prefix.Contains(ip) {
			what := host + " resolves to " + ip.String()
			if normalizeHost(strings.Trim(host, "[]")) == ip.String() {
				what = ip.String()
			}
			return refused("%s, a %s address (allow it explicitly with --webhook-allow %s)", what, r.why, ip)
		}
	}
	if p.restricted() && !nameListed {
		return refused("%s (%s) is not in the operator's allow-list (--webhook-allow)", host, ip)
	}
	return nil
}

// control returns a net.Dialer Control function that checks the resolved address of each connection attempt
// for host (as written in the URL) before the socket connects.
func (p *TargetPolicy) control(host string) func(network, address string, c syscall.RawConn) error {
	listed := p.nameListed(normalizeHost(host))
	return func(_, address string, _ syscall.RawConn) error {
		ipStr, _, err := net.SplitHostPort(address)
		if err != nil {
			return refused("unexpected dial address %q", address)
		}
		ip, err := netip.ParseAddr(ipStr)
		if err != nil {
			return refused("unexpected dial address %q", address)
		}
		return p.checkIP(host, ip, listed)
	}
}

func normalizeHost(h string) string { return strings.TrimSuffix(strings.ToLower(h), ".") }

// validHostname accepts letters, digits, '-', '_' and inner dots, up to 253 characters.
func validHostname(h string) bool {
	if h == "" || len(h) > 253 || strings.HasPrefix(h, ".") || strings.HasSuffix(h, ".") || strings.Contains(h, "..") {
		return false
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_') {
			return false
		}
	}
	return true
}

// DialContext returns a dial function that checks each resolved address of the target against the policy
// before the socket connects, as item webhooks do (for other senders: notification channels).
func (p *TargetPolicy) DialContext(d *net.Dialer) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		dd := *d
		dd.Control = p.control(host)
		return dd.DialContext(ctx, network, addr)
	}
}
