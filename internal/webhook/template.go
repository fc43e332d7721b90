package webhook

import (
	"maps"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/ejserver/ejserver"
)

// DefaultMaxTemplates bounds the request templates a Sender keeps (one per distinct webhook setting).
const DefaultMaxTemplates = 4096

// template is what every request to one webhook setting has in common: the URL parsed and checked against
// the target policy, the method and timeouts, the static headers (the job's, Content-Type, User-Agent,
// Accept) and the signing keys. It is made once per setting and shared, read-only, by every item of every
// job that has that setting: a fire's items, and every fire of a job, no longer parse the URL, decode the
// secrets and build the header map each.
type template struct {
	w       ejserver.Webhook // the setting it was made from (its Headers cloned): a cached template matches it
	url     *url.URL
	target  string // url as a string, as resty takes it
	method  string
	header  http.Header // static headers, canonical keys; per-request ones are added to a copy
	connect time.Duration
	timeout time.Duration
	key     []byte // HMAC key of w.Secret (nil without)
	prevKey []byte // HMAC key of w.PreviousSecret (nil without)
}

// makeTemplate builds the template of w. Its errors never hold secret material.
func (s *Sender) makeTemplate(w ejserver.Webhook) (*template, error) {
	u, err := url.Parse(w.URL)
	if err != nil {
		return nil, refused("the URL does not parse")
	}
	if err := s.cfg.Allow.CheckURL(u); err != nil {
		return nil, err
	}
	t := &template{url: u, target: u.String(), method: w.Method, connect: w.ConnectTimeout(), timeout: w.Timeout()}
	if t.method == "" {
		t.method = http.MethodPost
	}
	if t.connect <= 0 {
		t.connect = ejserver.DefaultConnectTimeout * time.Millisecond
	}
	if t.timeout <= 0 {
		t.timeout = ejserver.DefaultTimeoutMs * time.Millisecond
	}
	if w.Secret != "" {
		if t.key, err = ParseSecret(w.Secret); err != nil {
			return nil, err // never holds the secret
		}
	}
	if w.PreviousSecret != "" {
		if t.prevKey, err = ParseSecret(w.PreviousSecret); err != nil {
			return nil, err
		}
	}
	t.header = make(http.Header, len(w.Headers)+4)
	for k, v := range w.Headers {
		if ForbiddenHeader(k) {
			continue // validation rejects these; a stored config that has one just loses it
		}
		if err := CheckHeaders(map[string]string{k: v}); err != nil {
			return nil, err // HTTP would refuse to send it, at every attempt
		}
		t.header.Set(k, v)
	}
	t.header["Content-Type"] = []string{"application/json"}
	t.header["User-Agent"] = []string{s.cfg.UserAgent}
	if t.header.Get("Accept") == "" {
		// what resty adds to a JSON request without one, added here once: resty's Set on a request's map
		// of eight headers grew it into a table at every request (sender.go's request makes the map for all)
		t.header["Accept"] = []string{"application/json"}
	}
	t.w = w
	t.w.Headers = maps.Clone(w.Headers)
	return t, nil
}

// matches reports whether t was made from a setting equal to w in everything a template holds.
func (t *template) matches(w ejserver.Webhook) bool {
	return t.w.URL == w.URL && t.w.Method == w.Method && t.w.TimeoutMs == w.TimeoutMs &&
		t.w.ConnectTimeoutMs == w.ConnectTimeoutMs && t.w.Secret == w.Secret &&
		t.w.PreviousSecret == w.PreviousSecret && maps.Equal(t.w.Headers, w.Headers)
}

// signature returns the webhook-signature value at now ("" without a secret): the current secret's, then
// the previous one's while w's grace period lasts.
func (t *template) signature(w ejserver.Webhook, now time.Time, id string, ts int64, body []byte) string {
	var sig string
	if t.key != nil {
		sig = Sign(t.key, id, ts, body)
	}
	if t.prevKey != nil && now.Before(w.PreviousSecretExpiresAt) {
		prev := Sign(t.prevKey, id, ts, body)
		if sig == "" {
			return prev
		}
		return sig + " " + prev
	}
	return sig
}

// maxTemplatesPerURL bounds the templates kept for one URL (jobs that differ in a header, say), so that
// finding one scans a short list.
const maxTemplatesPerURL = 8

// templates keeps the Sender's templates by URL, at most max of them (past it, an arbitrary one is
// dropped: a setting no item uses any more goes sooner or later, and one in use is made again).
type templates struct {
	max int

	mu    sync.RWMutex
	byURL map[string][]*template // settings that differ only in headers, method, timeouts or secrets share a URL
	n     int
}

func newTemplates(max int) *templates {
	if max <= 0 {
		max = DefaultMaxTemplates
	}
	return &templates{max: max, byURL: map[string][]*template{}}
}

// get returns w's template, making it (with make) when none is kept. An error is not kept: it is made again
// at the next item, as it was before templates.
func (c *templates) get(w ejserver.Webhook, make func(ejserver.Webhook) (*template, error)) (*template, error) {
	c.mu.RLock()
	for _, t := range c.byURL[w.URL] {
		if t.matches(w) {
			c.mu.RUnlock()
			return t, nil
		}
	}
	c.mu.RUnlock()
	t, err := make(w)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	kept := c.byURL[w.URL]
	for _, k := range kept {
		if k.matches(w) { // made meanwhile by another item: use that one
			return k, nil
		}
	}
	for c.n >= c.max {
		for u, ts := range c.byURL {
			delete(c.byURL, u)
			c.n -= len(ts)
			break
		}
	}
	if kept = c.byURL[w.URL]; len(kept) >= maxTemplatesPerURL {
		kept = append(kept[:0:0], kept[1:]...) // the oldest goes: a lookup scans a short list
		c.n--
	}
	c.byURL[w.URL] = append(kept, t)
	c.n++
	return t, nil
}

// len returns how many templates are kept.
func (c *templates) len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.n
}
