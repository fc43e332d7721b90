package api

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/ejserver/ejserver"
)

// etag is the entity-tag of a job's version, as the ETag header carries it.
func etag(version int32) string { return fmt.Sprintf(`"%d"`, version) }

// precondition is a request's If-Match (RFC 9110 13.1.1): "*" or a list of entity-tags. Entity-tags are
// opaque to the client, so a well-formed one that is not the job's current ETag ("stale", "99", W/"3") fails
// the precondition with 412 like an outdated one; only a header that is not valid syntax is a 400.
type precondition struct {
	anyVersion bool        // "*": whatever version is stored (the job must exist, as for any replace)
	tags       []entityTag // otherwise; none at all for an empty field, which matches nothing
}

// entityTag is one entity-tag of If-Match; opaque keeps its quotes, as in the ETag header.
type entityTag struct {
	weak   bool
	opaque string
}

// parseIfMatch reads the If-Match fields of a request: nil when it has none. Several fields are one list.
func parseIfMatch(h http.Header) (*precondition, error) {
	fields := h.Values("If-Match")
	if len(fields) == 0 {
		return nil, nil
	}
	value := strings.Trim(strings.Join(fields, ","), " \t")
	if value == "*" {
		return &precondition{anyVersion: true}, nil
	}
	tags, err := parseEntityTags(value)
	if err != nil {
		return nil, ejserver.Invalid("If-Match", "%v: send \"*\" or entity-tags such as \"3\" (the ETag of a GET)", err)
	}
	return &precondition{tags: tags}, nil
}

// matches is the check ReplaceJob makes against the stored version. If-Match compares strongly: a weak
// tag never matches, a strong one only when it is that version's ETag character for character.
func (p *precondition) matches(version int32) bool {
	if p.anyVersion {
		return true
	}
	current := etag(version)
	for _, t := range p.tags {
		if !t.weak && t.opaque == current {
			return true
		}
	}
	return false
}

// whyNoMatch explains a precondition that can match no version at all, or returns "" for one that can:
// the usual 412 detail ("changed since") would send its client looking for a concurrent edit.
func (p *precondition) whyNoMatch() string {
	if p == nil || p.anyVersion {
		return ""
	}
	for _, t := range p.tags {
		if !t.weak {
			return ""
		}
	}
	if len(p.tags) == 0 {
		return "If-Match is empty: it names no version, so none matches"
	}
	return "If-Match has only weak entity-tags (W/...), which never match (RFC 9110 13.1.1): send the ETag " +
		"as ejserver sent it, without W/ (a proxy that compresses responses may have weakened it)"
}

// parseEntityTags parses a list of entity-tags (RFC 9110 8.8.3): each "..." or W/"..." with no space or
// DQUOTE inside (a comma is allowed), separated by commas and optional white space; empty elements are
// skipped, as RFC 9110 5.6.1 asks of recipients.
func parseEntityTags(s string) ([]entityTag, error) {
	var tags []entityTag
	i := 0
	for {
		for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == ',') {
			i++
		}
		if i == len(s) {
			return tags, nil
		}
		var t entityTag
		start := i
		if strings.HasPrefix(s[i:], "W/") {
			t.weak, i = true, i+2
		}
		if i == len(s) || s[i] != '"' {
			return nil, fmt.Errorf("%q is not a quoted entity-tag", element(s[start:]))
		}
		end := i + 1
		for end < len(s) && s[end] != '"' {
			if !isEtagc(s[end]) {
				return nil, fmt.Errorf("entity-tag %s holds %q", element(s[start:]), s[end])
			}
			end++
		}
		if end == len(s) {
			return nil, errors.New("an entity-tag misses its closing quote")
		}
		t.opaque = s[i : end+1]
		tags = append(tags, t)
		for i = end + 1; i < len(s) && (s[i] == ' ' || s[i] == '\t'); i++ {
		}
		if i < len(s) && s[i] != ',' {
			return nil, fmt.Errorf("entity-tags must be separated by commas, not %q", element(s[i:]))
		}
	}
}

// isEtagc reports whether c may appear inside an entity-tag's quotes: etagc = %x21 / %x23-7E / obs-text.
func isEtagc(c byte) bool { return c == 0x21 || c >= 0x23 && c != 0x7F }

// element is the start of s up to the next comma, for error messages.
func element(s string) string {
	if i := strings.IndexByte(s, ','); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSpace(s)
}
