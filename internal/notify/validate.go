package notify

import (
	"errors"
	"fmt"
	"net"
	"net/mail"
	"net/url"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/webhook"
)

var channelNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

// ValidateChannelName checks a channel name: it becomes a ZooKeeper node name and a URL path segment.
func ValidateChannelName(name string) error {
	switch {
	case name == "":
		return invalid("name", "is required")
	case len(name) > MaxChannelNameLen:
		return invalid("name", "is %d characters long; the limit is %d", len(name), MaxChannelNameLen)
	case !channelNameRE.MatchString(name):
		return invalid("name", "%q may only hold letters, digits, '_', '.' and '-', and must start with a letter or digit", name)
	}
	return nil
}

func invalid(field, format string, args ...any) *ejserver.Error {
	return ejserver.Invalid(field, format, args...)
}

func asType[T any](err error, target *T) bool { return errors.As(err, target) }

// fieldErrors collects every offending field of a channel, in order.
type fieldErrors []ejserver.FieldError

func (f *fieldErrors) add(field, format string, args ...any) {
	*f = append(*f, ejserver.FieldError{Field: field, Message: fmt.Sprintf(format, args...)})
}

func (f fieldErrors) err() error {
	if len(f) == 0 {
		return nil
	}
	msg := f[0].Field + ": " + f[0].Message
	if len(f) > 1 {
		msg += fmt.Sprintf(" (and %d more)", len(f)-1)
	}
	return &ejserver.Error{Code: ejserver.EINVALID, Message: msg, Fields: f}
}

// Validate checks a channel as it is to be stored (secrets merged): every offending field is named, and no
// message repeats a secret's value.
func (c Channel) Validate() error {
	var f fieldErrors
	if err := ValidateChannelName(c.Name); err != nil {
		f.add("name", "%s", err.(*ejserver.Error).Fields[0].Message)
	}
	known := false
	for _, k := range ChannelKinds {
		known = known || c.Kind == k
	}
	if !known {
		f.add("kind", "must be one of %s, got %q", describeKinds(), c.Kind)
	}
	for _, k := range c.settingsOf() {
		if k != c.Kind {
			f.add(string(k), "holds %s settings, but the channel's kind is %q: set only %q", k, c.Kind, c.Kind)
		}
	}
	if known && !c.hasSettings(c.Kind) {
		f.add(string(c.Kind), "is required for a %s channel", c.Kind)
	}
	if c.TimeoutMs != 0 && (c.TimeoutMs < 100 || c.TimeoutMs > MaxTimeoutMs) {
		f.add("timeoutMs", "must be between 100 and %d (or left out for %d), got %d", MaxTimeoutMs, DefaultTimeoutMs, c.TimeoutMs)
	}
	if c.MaxAttempts != 0 && (c.MaxAttempts < 1 || c.MaxAttempts > MaxMaxAttempts) {
		f.add("maxAttempts", "must be between 1 and %d (or left out for %d), got %d", MaxMaxAttempts, DefaultMaxAttempts, c.MaxAttempts)
	}
	f.text("description", c.Description, 1024)
	switch c.Kind {
	case ChannelWebhook:
		if s := c.Webhook; s != nil {
			f.url("webhook.url", s.URL, false, true)
			if v := str(s.Secret); v != "" {
				if _, err := webhook.ParseSecret(v); err != nil {
					f.add("webhook.secret", "%v", err) // ParseSecret's errors never hold the secret
				}
			}
		}
	case ChannelSlack:
		if s := c.Slack; s != nil {
			f.url("slack.url", str(s.URL), true, true)
		}
	case ChannelDingTalk:
		if s := c.DingTalk; s != nil {
			f.url("dingtalk.url", str(s.URL), true, true)
			f.token("dingtalk.secret", str(s.Secret), false)
			f.mobiles("dingtalk.atMobiles", s.AtMobiles)
		}
	case ChannelWeCom:
		if s := c.WeCom; s != nil {
			f.url("wecom.url", str(s.URL), true, true)
			f.mobiles("wecom.mentionedMobiles", s.MentionedMobiles)
		}
	case ChannelPagerDuty:
		if s := c.PagerDuty; s != nil {
			f.token("pagerduty.routingKey", str(s.RoutingKey), true)
			if s.URL != "" {
				f.url("pagerduty.url", s.URL, false, false)
			}
		}
	case ChannelEmail:
		if s := c.Email; s != nil {
			f.email(s)
		}
	}
	return f.err()
}

func (f *fieldErrors) text(field, s string, limit int) {
	switch {
	case len(s) > limit:
		f.add(field, "is %d bytes long; the limit is %d", len(s), limit)
	case !utf8.ValidString(s):
		f.add(field, "is not valid UTF-8")
	case strings.ContainsAny(s, "\x00"):
		f.add(field, "must not contain NUL characters")
	}
}

// url checks an endpoint: https, or http to a loopback address (a local relay, a test); no credentials, no
// fragment. A secret URL's value (it holds a token) is never repeated in a message.
func (f *fieldErrors) url(field, raw string, secret, required bool) {
	if raw == "" {
		if required {
			f.add(field, "is required")
		}
		return
	}
	if len(raw) > ejserver.MaxURLLen {
		f.add(field, "is longer than %d characters", ejserver.MaxURLLen)
		return
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil && secret:
		f.add(field, "is not a URL")
	case err != nil:
		f.add(field, "is not a URL: %v", err)
	case u.Scheme != "https" && !(u.Scheme == "http" && loopbackHost(u.Hostname())):
		f.add(field, "must be an https URL (http only to a loopback address), got scheme %q", u.Scheme)
	case u.Hostname() == "":
		f.add(field, "has no host")
	case u.User != nil:
		f.add(field, "must not carry user:password credentials")
	case u.Fragment != "":
		f.add(field, "must not have a #fragment")
	}
}

func loopbackHost(h string) bool {
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// token checks a secret token: printable ASCII without spaces, at most 256 bytes; its value is never shown.
func (f *fieldErrors) token(field, v string, required bool) {
	if v == "" {
		if required {
			f.add(field, "is required")
		}
		return
	}
	if len(v) > 256 {
		f.add(field, "is longer than 256 characters")
		return
	}
	for i := 0; i < len(v); i++ {
		if v[i] <= ' ' || v[i] >= 0x7f {
			f.add(field, "must be printable ASCII without spaces")
			return
		}
	}
}

func (f *fieldErrors) mobiles(field string, list []string) {
	if len(list) > 50 {
		f.add(field, "has %d numbers; the limit is 50", len(list))
		return
	}
	for i, m := range list {
		ok := m != "" && len(m) <= 32
		for j := 0; j < len(m) && ok; j++ {
			ok = m[j] >= '0' && m[j] <= '9' || j == 0 && m[j] == '+' || m[j] == '-'
		}
		if !ok {
			f.add(fmt.Sprintf("%s[%d]", field, i), "%q is not a phone number (digits, an optional leading '+', '-')", m)
		}
	}
}

func (f *fieldErrors) email(s *EmailSettings) {
	switch {
	case s.Host == "":
		f.add("email.host", "is required")
	case len(s.Host) > 253 || strings.ContainsAny(s.Host, "/:@ \t\r\n") && net.ParseIP(s.Host) == nil:
		f.add("email.host", "%q is not a host name or IP address (give the port in email.port)", s.Host)
	}
	if s.Port != 0 && (s.Port < 1 || s.Port > 65535) {
		f.add("email.port", "must be between 1 and 65535, got %d", s.Port)
	}
	switch s.TLS {
	case "", TLSStartTLS, TLSImplicit, TLSNone:
	default:
		f.add("email.tls", "must be one of starttls, tls, none, got %q", s.TLS)
	}
	switch s.Auth {
	case "", "plain", "login":
	default:
		f.add("email.auth", "must be plain or login, got %q", s.Auth)
	}
	f.text("email.username", s.Username, 256)
	switch {
	case s.Username == "" && str(s.Password) != "":
		f.add("email.username", "is required with a password")
	case s.Username != "" && str(s.Password) == "":
		f.add("email.password", "is required with a username")
	case s.Username != "" && s.TLS == TLSNone && !loopbackHost(s.Host):
		f.add("email.tls", "none would send the password in clear: use starttls or tls (none only to a loopback relay)")
	}
	if s.Auth != "" && s.Username == "" {
		f.add("email.auth", "needs a username and password")
	}
	if len(str(s.Password)) > 1024 {
		f.add("email.password", "is longer than 1024 characters")
	}
	if s.From == "" {
		f.add("email.from", "is required")
	} else if _, err := mail.ParseAddress(s.From); err != nil || strings.ContainsAny(s.From, "\r\n") {
		f.add("email.from", "%q is not an email address", s.From)
	}
	switch {
	case len(s.To) == 0:
		f.add("email.to", "needs at least one address")
	case len(s.To) > 50:
		f.add("email.to", "has %d addresses; the limit is 50", len(s.To))
	}
	for i, a := range s.To {
		if _, err := mail.ParseAddress(a); err != nil || strings.ContainsAny(a, "\r\n") {
			f.add(fmt.Sprintf("email.to[%d]", i), "%q is not an email address", a)
		}
	}
	if strings.ContainsAny(s.SubjectPrefix, "\r\n") || len(s.SubjectPrefix) > 100 {
		f.add("email.subjectPrefix", "must be one line of at most 100 bytes")
	}
}

// Normalize fills the defaults a stored channel shows (so a GET shows what is in force).
func (c *Channel) Normalize() {
	if c.TimeoutMs == 0 {
		c.TimeoutMs = DefaultTimeoutMs
	}
	if c.MaxAttempts == 0 {
		c.MaxAttempts = DefaultMaxAttempts
	}
	if s := c.Email; s != nil {
		if s.TLS == "" {
			s.TLS = TLSStartTLS
		}
		if s.Port == 0 {
			s.Port = map[string]int{TLSStartTLS: 587, TLSImplicit: 465, TLSNone: 25}[s.TLS]
		}
		if s.Auth == "" && s.Username != "" {
			s.Auth = "plain"
		}
		if s.SubjectPrefix == "" {
			s.SubjectPrefix = "[ejserver]"
		}
	}
	if s := c.PagerDuty; s != nil && s.URL == "" {
		s.URL = DefaultPagerDutyURL
	}
}
