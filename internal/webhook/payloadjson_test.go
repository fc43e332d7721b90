package webhook

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// shardingContext is ElasticJob's ShardingContext as its HTTP job executor serialises it (Gson field order):
// what appendShardingContext must write, as encoding/json would.
type shardingContext struct {
	JobName            string `json:"jobName"`
	TaskID             string `json:"taskId"`
	ShardingTotalCount int    `json:"shardingTotalCount"`
	JobParameter       string `json:"jobParameter"`
	ShardingItem       int    `json:"shardingItem"`
	ShardingParameter  string `json:"shardingParameter"`
}

// encodingJSONShardingContext is the header as encoding/json wrote it before appendShardingContext.
func encodingJSONShardingContext(p Payload) string {
	var b strings.Builder
	_ = json.NewEncoder(&b).Encode(shardingContext{
		JobName: p.JobName, TaskID: p.TaskID, ShardingTotalCount: p.ShardingTotalCount,
		JobParameter: p.JobParameter, ShardingItem: p.ShardingItem, ShardingParameter: p.ShardingParameter,
	})
	return asciiJSON([]byte(strings.TrimSuffix(b.String(), "\n")))
}

func checkPayloadJSON(t *testing.T, p Payload) {
	t.Helper()
	want, err := json.Marshal(p)
	got, ok := appendPayload(nil, p)
	switch {
	case err != nil && ok:
		t.Fatalf("encoding/json refuses %+v (%v); appendPayload wrote %s", p, err, got)
	case err == nil && ok && !bytes.Equal(got, want):
		t.Fatalf("appendPayload:\n%s\nencoding/json:\n%s", got, want)
	}
	if got, want := asciiJSON(appendShardingContext(nil, p)), encodingJSONShardingContext(p); got != want {
		t.Fatalf("shardingContext:\n%s\nencoding/json:\n%s", got, want)
	}
}

func TestPayloadJSONMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 21, 10, 0, 0, 123456789, time.UTC)
	base := testDelivery("http://x").Payload
	for name, change := range map[string]func(p *Payload){
		"as dispatched": func(*Payload) {},
		"escapes":       func(p *Payload) { p.ShardingParameter = "a\"b\\c\n\r\t\b\f\x00\x1f<>&\u2028\u2029\x7f" },
		"utf-8":         func(p *Payload) { p.JobParameter, p.ShardingParameter = "广州=1", "Zürich 😀" },
		"invalid utf-8": func(p *Payload) { p.JobParameter = "a\xffb\xc3(c\xed\xa0\x80" },
		"every optional": func(p *Payload) {
			p.Iteration, p.CallbackURL, p.CallbackToken, p.LeaseSeconds, p.JitterMs, p.DueAt = 3, "http://cb/x?a=1&b=<2>", "tok", 30, 1500, at
		},
		"negative ints": func(p *Payload) { p.ShardingItem, p.JitterMs, p.Attempt = -1, -5, 0 },
		"a zone":        func(p *Payload) { p.ScheduledAt = at.In(time.FixedZone("x", 8*3600)) },
		"zero times":    func(p *Payload) { p.ScheduledAt = time.Time{} },
		"year 10000":    func(p *Payload) { p.ScheduledAt = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) },
		"a workflow":    func(p *Payload) { p.Workflow = json.RawMessage(`{ "name" : "wf" }`) },
		"empty strings": func(p *Payload) { *p = Payload{} },
	} {
		t.Run(name, func(t *testing.T) {
			p := base
			change(&p)
			checkPayloadJSON(t, p)
		})
	}
	// the body as sent: times in UTC, the encoder used whenever it can
	p := base
	p.ScheduledAt, p.DueAt = at.In(time.FixedZone("x", -3600)), at.Add(time.Second).In(time.FixedZone("y", 3600))
	got, err := payloadBody(p)
	p.ScheduledAt, p.DueAt = p.ScheduledAt.UTC(), p.DueAt.UTC()
	want, _ := json.Marshal(p)
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("payloadBody %s (%v), want %s", got, err, want)
	}
}

func FuzzPayloadJSONMatchesEncodingJSON(f *testing.F) {
	f.Add("settle", "settle@-@0,1@-@READY@-@10.0.0.7@-@4242", "Guangzhou", "batch=500", 2, 4, int64(1795000000), int64(5), 1, "")
	f.Add("a<b>&c", "\u2028\x00", "\xff\xfe", "\"\\", -1, 0, int64(-62135596800), int64(0), 0, "tok")
	f.Fuzz(func(t *testing.T, job, task, param, jobParam string, item, total int, sec, nsec int64, iteration int, token string) {
		p := Payload{
			JobName: job, TaskID: task, ExecutionID: "e", ShardingItem: item, ShardingParameter: param,
			ShardingTotalCount: total, JobParameter: jobParam, Source: "NORMAL_TRIGGER",
			ScheduledAt: time.Unix(sec, nsec).UTC(), Attempt: 1, Iteration: iteration, InstanceID: "i", CallbackToken: token,
		}
		checkPayloadJSON(t, p)
	})
}

// The body and the header are each one allocation of the size they need (no growth), escapes aside.
func TestPayloadJSONSizes(t *testing.T) {
	p := testDelivery("http://x").Payload
	p.Iteration, p.CallbackURL, p.CallbackToken, p.LeaseSeconds, p.JitterMs = -1<<62, "http://cb", "tok", -1<<62, -1<<62
	p.ShardingItem, p.ShardingTotalCount, p.Attempt = -1<<62, -1<<62, -1<<62
	p.ScheduledAt = time.Date(2026, 11, 21, 10, 0, 0, 123456789, time.FixedZone("x", -12*3600-45*60))
	p.DueAt = p.ScheduledAt
	if b, _ := appendPayload(make([]byte, 0, payloadSize(p)), p); cap(b) != payloadSize(p) {
		t.Errorf("the body (%d bytes) outgrew its estimate %d", len(b), payloadSize(p))
	}
	if b := appendShardingContext(make([]byte, 0, 160+len(p.JobName)+len(p.TaskID)+len(p.JobParameter)+len(p.ShardingParameter)), p); cap(b) != 160+len(p.JobName)+len(p.TaskID)+len(p.JobParameter)+len(p.ShardingParameter) {
		t.Errorf("the header (%d bytes) outgrew its estimate", len(b))
	}
}
