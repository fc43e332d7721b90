package webhook

import (
	"fmt"
	"strings"

	"github.com/ejserver/ejserver"
)

// The headers of the webhook contract. Keys are written as the Standard Webhooks spec and ElasticJob spell
// them (HTTP header names are case-insensitive; receivers match them so).
const (
	HeaderID              = "webhook-id"
	HeaderTimestamp       = "webhook-timestamp"
	HeaderSignature       = "webhook-signature"
	HeaderShardingContext = "shardingContext"
	// HeaderCallbackURL and HeaderCallbackToken repeat the body's callbackUrl and callbackToken.
	HeaderCallbackURL   = "Ejserver-Callback-Url"
	HeaderCallbackToken = "Ejserver-Callback-Token"
)

// ForbiddenHeader reports whether a job's config may not set the header name: a name that is not a valid
// HTTP token, or one the domain's rule (ejserver.ForbiddenHeader: the contract's webhook-*, shardingContext,
// Content-Type and User-Agent, and the headers the HTTP client owns, Host, Content-Length, Transfer-Encoding,
// Connection and the other hop-by-hop ones) reserves. Validation and the sender apply this one rule.
func ForbiddenHeader(name string) bool {
	return !validToken(name) || ejserver.ForbiddenHeader(name)
}

// CheckHeaders validates a job's extra headers: no forbidden name (see ForbiddenHeader) and no control
// characters in a value. The error names the first offending header, never its value.
func CheckHeaders(h map[string]string) error {
	for name, value := range h {
		if ForbiddenHeader(name) {
			return fmt.Errorf("header %q cannot be set by a job (reserved by the webhook contract or HTTP, or not a valid name)", name)
		}
		for i := 0; i < len(value); i++ {
			if c := value[i]; (c < ' ' && c != '\t') || c == 0x7f {
				return fmt.Errorf("header %q: value contains a control character", name)
			}
		}
	}
	return nil
}

// validToken reports whether s is an RFC 9110 token.
func validToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}
