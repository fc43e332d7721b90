package audit

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/notify"
)

func TestMain(m *testing.M) { goleakMain(m) }

func job() ejserver.JobConfig {
	return ejserver.JobConfig{JobName: "settle", Cron: "0 */5 * * * ?", ShardingTotalCount: 2,
		Webhook: ejserver.Webhook{URL: "http://r.example/hook", Method: "POST", Secret: "whsec_c2VjcmV0MQ==",
			Headers: map[string]string{"X-Team": "a"}},
		Props: map[string]string{ejserver.PropSecret: "whsec_c2VjcmV0MQ==", "other": "x"}}
}

func TestDiff(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		change func(*ejserver.JobConfig)
		want   []Change
	}{
		{"nothing", func(*ejserver.JobConfig) {}, nil},
		{"cron", func(c *ejserver.JobConfig) { c.Cron = "0 */10 * * * ?" },
			[]Change{{Field: "cron", Before: "0 */5 * * * ?", After: "0 */10 * * * ?"}}},
		{"count and disabled", func(c *ejserver.JobConfig) { c.ShardingTotalCount, c.Disabled = 4, true },
			[]Change{{Field: "disabled", Before: "false", After: "true"}, {Field: "shardingTotalCount", Before: "2", After: "4"}}},
		{"header added", func(c *ejserver.JobConfig) { c.Webhook.Headers = map[string]string{"X-Team": "a", "X-B": "b"} },
			[]Change{{Field: "webhook.headers.X-B", After: "b", Note: NoteAdded}}},
		{"header removed", func(c *ejserver.JobConfig) { c.Webhook.Headers = nil },
			[]Change{{Field: "webhook.headers.X-Team", Before: "a", Note: NoteRemoved}}},
		{"secret rotated", func(c *ejserver.JobConfig) {
			c.Webhook.Secret = "whsec_c2VjcmV0Mg=="
			c.Props[ejserver.PropSecret] = c.Webhook.Secret
		}, []Change{{Field: "webhook.secret", Note: NoteChanged}}},
		{"secret removed", func(c *ejserver.JobConfig) { c.Webhook.Secret = ""; delete(c.Props, ejserver.PropSecret) },
			[]Change{{Field: "webhook.secret", Note: NoteRemoved}}},
		{"tls key set", func(c *ejserver.JobConfig) {
			c.Webhook.TLS = &ejserver.WebhookTLS{ClientKeyPem: "-----BEGIN PRIVATE KEY-----\nabc"}
		}, []Change{{Field: "webhook.tls.clientKeyPem", Note: NoteSet}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			before := job()
			after := job()
			after.Props = map[string]string{ejserver.PropSecret: before.Props[ejserver.PropSecret], "other": "x"}
			tt.change(&after)
			got := Diff(JobFields(before), JobFields(after))
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("Diff =\n%+v\nwant\n%+v", got, tt.want)
			}
			b, _ := json.Marshal(got)
			if strings.Contains(string(b), "whsec_") || strings.Contains(string(b), "PRIVATE KEY") {
				t.Fatalf("a secret in the diff: %s", b)
			}
		})
	}
}

func TestDiffLongValueCut(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", 300)
	got := Diff(map[string]Field{"a": {Value: "x"}}, map[string]Field{"a": {Value: long}})
	if len(got) != 1 || len(got[0].After) > maxValueLen+len("…") || !strings.HasSuffix(got[0].After, "…") {
		t.Fatalf("got %q", got)
	}
	if !strings.HasPrefix(long, strings.TrimSuffix(got[0].After, "…")) {
		t.Fatal("cut inside a character")
	}
}

func TestChannelFields(t *testing.T) {
	t.Parallel()
	s := func(v string) *string { return &v }
	before := notify.Channel{Name: "ops", Kind: notify.ChannelDingTalk, DingTalk: &notify.DingTalkSettings{URL: s("https://oapi.dingtalk.com/robot/send?access_token=t1"), Secret: s("SECabc")}}
	after := before
	d := *before.DingTalk
	d.Secret = s("SECdef")
	after.DingTalk = &d
	after.Description = "on call"
	got := Diff(ChannelFields(before), ChannelFields(after))
	want := []Change{{Field: "description", After: "on call", Note: NoteAdded}, {Field: "dingtalk.secret", Note: NoteChanged}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v want %+v", got, want)
	}
	b, _ := json.Marshal(ChannelFields(after))
	_ = b // the fields hold the secret values (compared in memory); Diff's output is what is stored
}

// FuzzDiff: a diff never shows a secret's value, is empty for equal inputs, and names each differing field
// exactly once, in order.
func FuzzDiff(f *testing.F) {
	f.Add("a", "1", "2", "whsec_x", "whsec_y", true)
	f.Add("", "", "", "", "s", false)
	f.Fuzz(func(t *testing.T, name, v1, v2, s1, s2 string, extra bool) {
		before := map[string]Field{name: {Value: v1}, "secret": {Value: s1, Secret: true}}
		after := map[string]Field{name: {Value: v2}, "secret": {Value: s2, Secret: true}}
		if extra {
			after["zz"] = Field{Value: v1}
		}
		if len(Diff(before, before)) != 0 {
			t.Fatal("a diff of equal configs")
		}
		got := Diff(before, after)
		seen := map[string]bool{}
		for i, c := range got {
			if seen[c.Field] {
				t.Fatalf("field %q twice", c.Field)
			}
			seen[c.Field] = true
			if i > 0 && got[i-1].Field >= c.Field {
				t.Fatal("not sorted")
			}
			if c.Field == "secret" && (c.Before != "" || c.After != "") {
				t.Fatalf("secret shown: %+v", c)
			}
		}
		if (s1 != s2) != seen["secret"] && name != "secret" {
			t.Fatalf("secret change %v, diff %+v", s1 != s2, got)
		}
	})
}
