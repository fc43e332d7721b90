package integration

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// Every bad request gets a problem+json naming the field, and nothing stored changes.
func TestBadInputIsRejectedAndChangesNothing(t *testing.T) {
	t.Parallel()
	recv := newReceiver(t)
	c := newCluster(t, 1)
	p := c.peers[0]
	good := job("keep", "0 0 3 * * ?", 2, recv.URL)
	good["shardingItemParameters"] = "0=A,1=B"
	mustDo(t, p, "POST", "/api/v1/jobs", good, http.StatusCreated, nil)
	before := mustDo(t, p, "GET", "/api/v1/jobs/keep/dump", nil, http.StatusOK, nil)
	var v map[string]any
	mustDo(t, p, "GET", "/api/v1/jobs/keep", nil, http.StatusOK, &v)

	bad := func(field string, mod func(map[string]any)) map[string]any {
		j := job("keep", "0 0 3 * * ?", 2, recv.URL)
		mod(j)
		return j
	}
	huge := `{"jobName":"big","description":"` + strings.Repeat("x", 2<<20) + `"}`
	changed := bad("", func(j map[string]any) { j["jobParameter"] = "changed" }) // valid: only a precondition stops it
	current := fmt.Sprintf(`"%v"`, v["version"])
	tests := []struct {
		name, method, path string
		body               any
		headers            []string
		status             int
		field              string
	}{
		{"malformed json", "POST", "/api/v1/jobs", `{"jobName":`, nil, 400, "body"},
		{"not json", "POST", "/api/v1/jobs", `jobName=x`, nil, 400, "body"},
		{"unknown field", "POST", "/api/v1/jobs", `{"jobName":"x","shards":3}`, nil, 400, "shards"},
		{"unknown nested field", "POST", "/api/v1/jobs", `{"jobName":"x","webhook":{"uri":"http://h/"}}`, nil, 400, "webhook.uri"},
		{"wrong type", "POST", "/api/v1/jobs", `{"jobName":"x","shardingTotalCount":"3"}`, nil, 400, "shardingTotalCount"},
		{"invalid name", "POST", "/api/v1/jobs", job("../etc", "", 1, recv.URL), nil, 400, "jobName"},
		{"slash in name", "POST", "/api/v1/jobs", job("a/b", "", 1, recv.URL), nil, 400, "jobName"},
		{"bad cron", "POST", "/api/v1/jobs", job("x", "0 0 25 * * ?", 1, recv.URL), nil, 400, "cron"},
		{"zero items", "POST", "/api/v1/jobs", job("x", "", 0, recv.URL), nil, 400, "shardingTotalCount"},
		{"bad url", "POST", "/api/v1/jobs", job("x", "", 1, "ftp://h/x"), nil, 400, "webhook.url"},
		{"metadata target", "POST", "/api/v1/jobs", job("x", "", 1, "http://169.254.169.254/latest"), nil, 400, "webhook.url"},
		{"duplicate", "POST", "/api/v1/jobs", good, nil, 409, ""},
		{"oversized body", "POST", "/api/v1/jobs", huge, nil, 413, ""},
		{"replace with bad params", "PUT", "/api/v1/jobs/keep", bad("", func(j map[string]any) { j["shardingItemParameters"] = "0=A,7=B" }), nil, 400, "shardingItemParameters"},
		{"replace with a bad header", "PUT", "/api/v1/jobs/keep", bad("", func(j map[string]any) {
			j["webhook"] = map[string]any{"url": recv.URL, "headers": map[string]string{"webhook-id": "forged"}}
		}), nil, 400, "webhook.headers.webhook-id"},
		{"rename by replace", "PUT", "/api/v1/jobs/keep", bad("", func(j map[string]any) { j["jobName"] = "other" }), nil, 400, "jobName"},
		// issue 24 (S1): overlapPolicy, catchUp and jitterMs
		{"overlap policy against misfire", "PUT", "/api/v1/jobs/keep", bad("", func(j map[string]any) { j["overlapPolicy"], j["misfire"] = "SKIP", true }), nil, 400, "overlapPolicy"},
		{"unknown overlap policy", "PUT", "/api/v1/jobs/keep", bad("", func(j map[string]any) { j["overlapPolicy"] = "REPLACE" }), nil, 400, "overlapPolicy"},
		{"catch-up against replayMissedFires", "PUT", "/api/v1/jobs/keep", bad("", func(j map[string]any) { j["catchUp"], j["replayMissedFires"] = "all", true }), nil, 400, "catchUp"},
		{"catch-up window without all", "PUT", "/api/v1/jobs/keep", bad("", func(j map[string]any) { j["catchUpWindowSeconds"] = 60 }), nil, 400, "catchUpWindowSeconds"},
		{"negative jitter", "PUT", "/api/v1/jobs/keep", bad("", func(j map[string]any) { j["jitterMs"] = -1 }), nil, 400, "jitterMs"},
		// If-Match: a well-formed entity-tag that is not the current ETag fails the precondition, whatever it
		// holds (tags are opaque); a weak one never matches, even the current version's; only a header that
		// is not entity-tag syntax is a 400
		{"stale If-Match", "PUT", "/api/v1/jobs/keep", changed, []string{"If-Match", `"99"`}, 412, ""},
		{"If-Match not a version", "PUT", "/api/v1/jobs/keep", changed, []string{"If-Match", `"stale"`}, 412, ""},
		{"If-Match list of stale tags", "PUT", "/api/v1/jobs/keep", changed, []string{"If-Match", `"98", "99"`}, 412, ""},
		{"If-Match weak current", "PUT", "/api/v1/jobs/keep", changed, []string{"If-Match", "W/" + current}, 412, ""},
		{"If-Match empty", "PUT", "/api/v1/jobs/keep", changed, []string{"If-Match", ""}, 412, ""},
		{"If-Match unquoted", "PUT", "/api/v1/jobs/keep", changed, []string{"If-Match", `soon`}, 400, "If-Match"},
		{"If-Match unterminated", "PUT", "/api/v1/jobs/keep", changed, []string{"If-Match", `"0`}, 400, "If-Match"},
		{"If-Match star in a list", "PUT", "/api/v1/jobs/keep", changed, []string{"If-Match", "*, " + current}, 400, "If-Match"},
		{"unknown job get", "GET", "/api/v1/jobs/nope", nil, nil, 404, ""},
		{"unknown job put", "PUT", "/api/v1/jobs/nope", job("nope", "", 1, recv.URL), nil, 404, ""},
		{"unknown job delete", "DELETE", "/api/v1/jobs/nope", nil, nil, 404, ""},
		{"unknown job trigger", "POST", "/api/v1/jobs/nope/trigger", nil, nil, 404, ""},
		{"trigger bad item", "POST", "/api/v1/jobs/keep/trigger", map[string]any{"items": []int{5}}, nil, 400, "items"},
		{"trigger unknown field", "POST", "/api/v1/jobs/keep/trigger", `{"param":"x"}`, nil, 400, "param"},
		{"item out of range", "POST", "/api/v1/jobs/keep/sharding/9/disable", nil, nil, 404, ""},
		{"item not a number", "POST", "/api/v1/jobs/keep/sharding/x/disable", nil, nil, 400, "item"},
		{"server not an ip", "POST", "/api/v1/servers/not-an-ip/disable", nil, nil, 400, "ip"},
		{"cron preview", "GET", "/api/v1/cron/next?cron=0+0+12+%3F+*+MON%231+2030&count=1000", nil, nil, 400, "count"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, raw, err := p.Do(tt.method, tt.path, tt.body, nil, tt.headers...)
			if err != nil {
				t.Fatal(err)
			}
			if status != tt.status {
				t.Fatalf("status %d, want %d: %s", status, tt.status, raw)
			}
			var prob struct {
				Type   string `json:"type"`
				Title  string `json:"title"`
				Status int    `json:"status"`
				Detail string `json:"detail"`
				Field  string `json:"field"`
			}
			if err := json.Unmarshal(raw, &prob); err != nil || prob.Status != tt.status || prob.Title == "" || prob.Detail == "" || prob.Type == "" {
				t.Fatalf("not a problem+json: %s (%v)", raw, err)
			}
			if prob.Field != tt.field {
				t.Fatalf("field %q, want %q (%s)", prob.Field, tt.field, prob.Detail)
			}
		})
	}
	after := mustDo(t, p, "GET", "/api/v1/jobs/keep/dump", nil, http.StatusOK, nil)
	if configLine(before) != configLine(after) {
		t.Fatalf("the stored config changed:\nbefore %s\nafter  %s", configLine(before), configLine(after))
	}
	var w map[string]any
	if mustDo(t, p, "GET", "/api/v1/jobs/keep", nil, http.StatusOK, &w); w["version"] != v["version"] {
		t.Fatalf("the job was rewritten: version %v, before %v", w["version"], v["version"])
	}
	mustDo(t, p, "GET", "/api/v1/jobs/big", nil, http.StatusNotFound, nil)
	mustDo(t, p, "GET", "/api/v1/jobs/x", nil, http.StatusNotFound, nil)
}

func configLine(dump []byte) string {
	for _, line := range strings.Split(string(dump), "\n") {
		if strings.Contains(line, "/keep/config |") {
			return line
		}
	}
	return ""
}
