package api

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/ejserver/ejserver/internal/service"
)

// cronSpy keeps the query /cron/next passed on.
type cronSpy struct {
	fakeService
	got service.CronQuery
}

func (s *cronSpy) CronNext(_ context.Context, q service.CronQuery) ([]time.Time, string, error) {
	s.got = q
	return []time.Time{}, "", nil
}

// The calendar lists of a cron preview are read comma-separated, repeated or both, blanks dropped, and
// echoed in the answer.
func TestCronNextReadsCalendarLists(t *testing.T) {
	tests := []struct {
		query            string
		exclude, include []string
	}{
		{"", nil, nil},
		{"&excludeCalendars=a", []string{"a"}, nil},
		{"&excludeCalendars=a,b&includeCalendars=c", []string{"a", "b"}, []string{"c"}},
		{"&excludeCalendars=a&excludeCalendars=b,+c+,", []string{"a", "b", "c"}, nil},
		{"&includeCalendars=,&excludeCalendars=", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			spy := &cronSpy{}
			rec := httptest.NewRecorder()
			New(Config{Service: spy}).ServeHTTP(rec, httptest.NewRequest("GET", "/api/v1/cron/next?cron=@hourly"+tt.query, nil))
			if rec.Code != 200 {
				t.Fatalf("status %d: %s", rec.Code, rec.Body)
			}
			if !slices.Equal(spy.got.ExcludeCalendars, tt.exclude) || !slices.Equal(spy.got.IncludeCalendars, tt.include) {
				t.Fatalf("passed exclude %q include %q, want %q %q", spy.got.ExcludeCalendars, spy.got.IncludeCalendars, tt.exclude, tt.include)
			}
			var out CronPreview
			if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(out.ExcludeCalendars, tt.exclude) || !slices.Equal(out.IncludeCalendars, tt.include) {
				t.Fatalf("answered %+v", out)
			}
		})
	}
}
