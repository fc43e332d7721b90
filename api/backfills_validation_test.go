package api

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/backfill"
	"github.com/ejserver/ejserver/internal/cluster"
)

// backfillJobs is the backfill service's job and node store for the handler tests: jobs by name, created
// backfills kept in memory (the ZooKeeper side is tested in internal/cluster and integration).
type backfillJobs struct {
	mu    sync.Mutex
	jobs  map[string]ejserver.JobConfig
	nodes map[string][]byte
}

func (s *backfillJobs) GetJob(job string) (ejserver.JobConfig, int32, error) {
	cfg, ok := s.jobs[job]
	if !ok {
		return cfg, 0, ejserver.Errorf(ejserver.ENOTFOUND, "job %q not found", job)
	}
	return cfg, 1, nil
}

func (s *backfillJobs) CreateBackfill(job, id string, data []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nodes[job+"/"+id] = data
	return nil
}

func (s *backfillJobs) ReadBackfill(job, id string) (cluster.BackfillNode, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	data, ok := s.nodes[job+"/"+id]
	if !ok {
		return cluster.BackfillNode{}, cluster.ErrNoBackfill
	}
	return cluster.BackfillNode{Job: job, ID: id, Data: data}, nil
}

func (s *backfillJobs) JobBackfillNodes(string) ([]cluster.BackfillNode, error) { return nil, nil }

func (s *backfillJobs) WriteBackfill(job, id string, data []byte, _ int32) (int32, error) {
	return 0, s.CreateBackfill(job, id, data)
}

// The backfill routes with the real backfill service behind them: every bad request is a 400 naming its
// field (or the status its cause deserves), and nothing is recorded for it.
func TestBackfillBadInputNamesTheField(t *testing.T) {
	store := &backfillJobs{nodes: map[string][]byte{}, jobs: map[string]ejserver.JobConfig{}}
	for name, cron := range map[string]string{"j": "0 * * * * ?", "fast": "* * * * * ?", "oneoff": ""} {
		cfg := ejserver.DefaultJobConfig()
		cfg.JobName, cfg.Cron, cfg.ShardingTotalCount = name, cron, 2
		store.jobs[name] = cfg
	}
	svc := backfill.NewService(store, nil, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	e := New(Config{Service: &fakeService{}, Tokens: testTokens(t), Backfills: svc})
	past := time.Now().Add(-time.Hour).UTC().Truncate(time.Minute)
	at := func(d time.Duration) string { return past.Add(d).Format(time.RFC3339) }
	tests := []struct {
		name, path, body string
		status           int
		field            string
	}{
		{"from missing", "/api/v1/jobs/j/backfill", `{"to":"` + at(0) + `"}`, 400, "from"},
		{"from not RFC 3339", "/api/v1/jobs/j/backfill", `{"from":"yesterday","to":"` + at(0) + `"}`, 400, "from"},
		{"from not a string", "/api/v1/jobs/j/backfill", `{"from":5,"to":"` + at(0) + `"}`, 400, "from"},
		{"to missing", "/api/v1/jobs/j/backfill", `{"from":"` + at(0) + `"}`, 400, "to"},
		{"to before from", "/api/v1/jobs/j/backfill", `{"from":"` + at(10*time.Minute) + `","to":"` + at(0) + `"}`, 400, "to"},
		{"to in the future", "/api/v1/jobs/j/backfill", `{"from":"` + at(0) + `","to":"` + at(2*time.Hour) + `"}`, 400, "to"},
		{"more than 10,000 fires", "/api/v1/jobs/fast/backfill", `{"from":"` + at(-3*time.Hour) + `","to":"` + at(0) + `"}`, 400, "to"},
		{"CANCEL_PREVIOUS", "/api/v1/jobs/j/backfill", `{"from":"` + at(-time.Hour) + `","to":"` + at(0) + `","overlapPolicy":"CANCEL_PREVIOUS"}`, 400, "overlapPolicy"},
		{"unknown policy", "/api/v1/jobs/j/backfill", `{"from":"` + at(-time.Hour) + `","to":"` + at(0) + `","overlapPolicy":"LATER"}`, 400, "overlapPolicy"},
		{"unknown field", "/api/v1/jobs/j/backfill", `{"from":"` + at(-time.Hour) + `","to":"` + at(0) + `","speed":2}`, 400, "speed"},
		{"not JSON", "/api/v1/jobs/j/backfill", `{"from":`, 400, ""},
		{"unknown job", "/api/v1/jobs/nope/backfill", `{"from":"` + at(-time.Hour) + `","to":"` + at(0) + `"}`, 404, ""},
		{"a one-off job has no past fires", "/api/v1/jobs/oneoff/backfill", `{"from":"` + at(-time.Hour) + `","to":"` + at(0) + `"}`, 409, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := serve(e, "POST", tt.path, tt.body)
			if rec.Code != tt.status || tt.field != "" && !strings.Contains(rec.Body.String(), `"field":"`+tt.field+`"`) {
				t.Fatalf("%s = %d %s, want %d naming %q", tt.body, rec.Code, rec.Body, tt.status, tt.field)
			}
		})
	}
	if len(store.nodes) != 0 {
		t.Fatalf("a refused request recorded %d backfills", len(store.nodes))
	}
	// the same range well formed is accepted: 61 fires of the minutely job, BUFFER_ONE by default
	rec := serve(e, "POST", "/api/v1/jobs/j/backfill", `{"from":"`+at(-time.Hour)+`","to":"`+at(0)+`"}`)
	if rec.Code != http.StatusAccepted || !strings.Contains(rec.Body.String(), `"total":61`) ||
		!strings.Contains(rec.Body.String(), `"overlapPolicy":"BUFFER_ONE"`) {
		t.Fatalf("valid request = %d %s", rec.Code, rec.Body)
	}
	if rec := serve(e, "GET", "/api/v1/jobs/j/backfill/nope", ""); rec.Code != http.StatusNotFound {
		t.Fatalf("unknown backfill = %d %s", rec.Code, rec.Body)
	}
}

func serve(e http.Handler, method, path, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+adminSecret)
	rec := httptest.NewRecorder()
	e.ServeHTTP(rec, req)
	return rec
}
