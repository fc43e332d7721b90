package api

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ejserver/ejserver/internal/calendar"
	"github.com/ejserver/ejserver/internal/calendarstore"
	"github.com/ejserver/ejserver/internal/service"
)

// fakeCalendars and fakeSteering serve the routes of the access tests; the routes' behaviour is tested
// against real ZooKeeper in integration (TestCalendar*, TestPause*).
type fakeCalendars struct{ CalendarStore }

func (fakeCalendars) List(context.Context) ([]calendarstore.Stored, error) { return nil, nil }

func (fakeCalendars) Create(_ context.Context, c calendar.Calendar) (calendarstore.Stored, error) {
	if _, err := calendar.Compile(c); err != nil {
		return calendarstore.Stored{}, err
	}
	return calendarstore.Stored{Calendar: c}, nil
}

type fakeSteering struct{ Steering }

func (fakeSteering) PauseJob(_ context.Context, name, by, note string) (service.JobView, error) {
	v := service.JobView{}
	v.JobName = name
	return v, nil
}

func (fakeSteering) JobNextFires(_ context.Context, name string, _ time.Time, _ int) (service.NextFires, error) {
	return service.NextFires{JobName: name, Next: []time.Time{}}, nil
}

func TestCalendarAndPauseBadInputNamesTheField(t *testing.T) {
	e := fullAPI(t)
	tests := []struct {
		method, path, body, field string
	}{
		{"POST", "/api/v1/calendars", `{"name":"hol","dates":["2026-13-01"]}`, "dates[0]"},
		{"POST", "/api/v1/calendars", `{"name":"hol","dates":["2026-12-01"],"colour":"red"}`, "colour"},
		{"POST", "/api/v1/calendars", `{"name":"hol","annual":["12-25"],"timeZone":"Nowhere/Land"}`, "timeZone"},
		{"POST", "/api/v1/jobs/j/pause", `{"note":"x","by":"me"}`, "by"},
		{"POST", "/api/v1/jobs/j/pause", `{"note":5}`, "note"},
	}
	for _, tt := range tests {
		req := httptest.NewRequest(tt.method, tt.path, strings.NewReader(tt.body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+adminSecret)
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, req)
		if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), `"field":"`+tt.field+`"`) {
			t.Errorf("%s %s %s = %d %s, want 400 naming %s", tt.method, tt.path, tt.body, rec.Code, rec.Body, tt.field)
		}
	}
}
