package audit

import (
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/notify"
)

// Field is one field of a config as Diff compares it. A secret field's Value is compared and never shown.
type Field struct {
	Value  string
	Secret bool
}

// Change is one field's difference. A secret field has no Before and After, only Note ("changed", "set",
// "removed").
type Change struct {
	Field  string `json:"field" example:"cron"`
	Before string `json:"before,omitempty" example:"0 */5 * * * ?"`
	After  string `json:"after,omitempty" example:"0 */10 * * * ?"`
	// Note is "added" or "removed" for a field present on one side only, "changed", "set" or "removed" for
	// a secret.
	Note string `json:"note,omitempty" example:"changed"`
}

// Notes of a Change.
const (
	NoteAdded   = "added"
	NoteRemoved = "removed"
	NoteChanged = "changed"
	NoteSet     = "set"
)

// maxValueLen bounds a value shown in a Change (a PEM certificate is long): longer ones are cut, with "…".
const maxValueLen = 200

// Diff returns the fields that differ between before and after, by field name. A field absent on one side
// reads as added or removed; a secret's value never appears, only that it changed, was set or removed.
func Diff(before, after map[string]Field) []Change {
	names := slices.Sorted(maps.Keys(before))
	for k := range after {
		if _, ok := before[k]; !ok {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	var out []Change
	for _, k := range names {
		b, inB := before[k]
		a, inA := after[k]
		if inB && inA && b.Value == a.Value {
			continue
		}
		if b.Secret || a.Secret {
			note := NoteChanged
			switch {
			case !inB || b.Value == "":
				note = NoteSet
			case !inA || a.Value == "":
				note = NoteRemoved
			}
			out = append(out, Change{Field: k, Note: note})
			continue
		}
		c := Change{Field: k, Before: cut(b.Value), After: cut(a.Value)}
		switch {
		case !inB:
			c.Note = NoteAdded
		case !inA:
			c.Note = NoteRemoved
		}
		out = append(out, c)
	}
	return out
}

func cut(s string) string {
	if len(s) <= maxValueLen {
		return s
	}
	i := maxValueLen
	for i > 0 && !utf8Start(s[i]) {
		i--
	}
	return s[:i] + "…"
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

// Flatten turns a JSON-encodable value into fields named by their path ("webhook.url", "headers.X-A",
// "list[2]"). Strings are shown as they are, other scalars as JSON; an empty object or list is left out.
func Flatten(v any) map[string]Field {
	out := map[string]Field{}
	b, err := json.Marshal(v)
	if err != nil {
		return out
	}
	var x any
	if err := json.Unmarshal(b, &x); err != nil {
		return out
	}
	flatten(out, "", x)
	return out
}

func flatten(out map[string]Field, prefix string, x any) {
	join := func(k string) string {
		if prefix == "" {
			return k
		}
		return prefix + "." + k
	}
	switch v := x.(type) {
	case map[string]any:
		for k, e := range v {
			flatten(out, join(k), e)
		}
	case []any:
		for i, e := range v {
			flatten(out, prefix+"["+strconv.Itoa(i)+"]", e)
		}
	case string:
		out[prefix] = Field{Value: v}
	case nil:
		out[prefix] = Field{Value: "null"}
	default:
		b, _ := json.Marshal(v)
		out[prefix] = Field{Value: string(b)}
	}
}

// jobHidden are fields of a job's JSON that say whether a secret is set: the secret's own field says more.
var jobHidden = []string{"webhook.hasSecret", "webhook.secretRotating", "webhook.tls.hasClientKey"}

// JobFields is a job's config as Diff compares it: its JSON (without secrets) plus the secrets as secret
// fields. Props that hold secrets are left out (the secret fields stand for them).
func JobFields(cfg ejserver.JobConfig) map[string]Field {
	out := Flatten(cfg)
	for _, k := range jobHidden {
		delete(out, k)
	}
	for k := range out {
		if p, ok := strings.CutPrefix(k, "props."); ok && secretProp(p) {
			delete(out, k)
		}
	}
	out["webhook.secret"] = Field{Value: cfg.Webhook.Secret, Secret: true}
	if cfg.Webhook.TLS != nil {
		out["webhook.tls.clientKeyPem"] = Field{Value: cfg.Webhook.TLS.ClientKeyPem, Secret: true}
	}
	return out
}

func secretProp(k string) bool {
	return k == ejserver.PropSecret || k == ejserver.PropPreviousSecret || k == ejserver.PropTLSClientKey ||
		strings.Contains(strings.ToLower(k), "secret") || strings.Contains(strings.ToLower(k), "password")
}

// ChannelFields is a channel as Diff compares it: its redacted JSON (without the hasXxx flags) plus its
// secrets as secret fields.
func ChannelFields(ch notify.Channel) map[string]Field {
	out := Flatten(ch.Redacted())
	for k := range out {
		last := k[strings.LastIndexByte(k, '.')+1:]
		if strings.HasPrefix(last, "has") && len(last) > 3 && last[3] >= 'A' && last[3] <= 'Z' {
			delete(out, k)
		}
	}
	secret := func(name string, p *string) {
		v := ""
		if p != nil {
			v = *p
		}
		out[name] = Field{Value: v, Secret: true}
	}
	if s := ch.Webhook; s != nil {
		secret("webhook.secret", s.Secret)
	}
	if s := ch.Slack; s != nil {
		secret("slack.url", s.URL)
	}
	if s := ch.DingTalk; s != nil {
		secret("dingtalk.url", s.URL)
		secret("dingtalk.secret", s.Secret)
	}
	if s := ch.WeCom; s != nil {
		secret("wecom.url", s.URL)
	}
	if s := ch.PagerDuty; s != nil {
		secret("pagerduty.routingKey", s.RoutingKey)
	}
	if s := ch.Email; s != nil {
		secret("email.password", s.Password)
	}
	return out
}
