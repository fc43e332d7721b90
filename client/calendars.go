package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Calendar is a named calendar (Quartz's HolidayCalendar and AnnualCalendar): days jobs exclude
// (excludeCalendars) or are restricted to (includeCalendars).
type Calendar struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	TimeZone    string          `json:"timeZone,omitempty"`
	Dates       []string        `json:"dates,omitempty"`
	Ranges      []CalendarRange `json:"ranges,omitempty"`
	Annual      []string        `json:"annual,omitempty"`
	Version     int32           `json:"version"`
	// ETag is the calendar's version as the API sent it, for ReplaceCalendar's ifMatch.
	ETag string `json:"-"`
}

// CalendarRange is an inclusive range of days, YYYY-MM-DD.
type CalendarRange struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// CalendarList is every calendar, by name.
type CalendarList struct {
	Items []Calendar `json:"items"`
}

// NextFires is a job's effective schedule ahead (calendars, endAt, remainingFires and pause applied).
type NextFires struct {
	JobName        string      `json:"jobName"`
	Cron           string      `json:"cron"`
	Next           []time.Time `json:"next"`
	RemainingFires *int        `json:"remainingFires,omitempty"`
	Pause          *Pause      `json:"pause,omitempty"`
	Ended          string      `json:"ended,omitempty"`
}

// Pause is who paused a job, why and when.
type Pause struct {
	By   string    `json:"by"`
	Note string    `json:"note,omitempty"`
	At   time.Time `json:"at"`
}

func calendarPath(name string) string { return "/api/v1/calendars/" + url.PathEscape(name) }

func (c *Client) calendarCall(ctx context.Context, rq request) (*Calendar, error) {
	var out Calendar
	rq.out = &out
	resp, err := c.do(ctx, rq)
	if err != nil {
		return nil, err
	}
	out.ETag = resp.Header().Get("ETag")
	return &out, nil
}

// CreateCalendar creates a calendar (a Calendar, or raw JSON); one of that name existing is a 409.
func (c *Client) CreateCalendar(ctx context.Context, body any) (*Calendar, error) {
	return c.calendarCall(ctx, request{method: http.MethodPost, path: "/api/v1/calendars", body: rawBody(body)})
}

// ListCalendars lists every calendar.
func (c *Client) ListCalendars(ctx context.Context) (*CalendarList, error) {
	var out CalendarList
	if _, err := c.do(ctx, request{method: http.MethodGet, path: "/api/v1/calendars", out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}

// GetCalendar reads a calendar; Calendar.ETag is its version for ReplaceCalendar.
func (c *Client) GetCalendar(ctx context.Context, name string) (*Calendar, error) {
	return c.calendarCall(ctx, request{method: http.MethodGet, path: calendarPath(name)})
}

// ReplaceCalendar replaces a calendar; with ifMatch it fails with 412 if someone changed it since.
func (c *Client) ReplaceCalendar(ctx context.Context, name string, body any, ifMatch string) (*Calendar, error) {
	rq := request{method: http.MethodPut, path: calendarPath(name), body: rawBody(body)}
	if ifMatch != "" {
		rq.header = map[string]string{"If-Match": ifMatch}
	}
	return c.calendarCall(ctx, rq)
}

// DeleteCalendar deletes a calendar; a 409 names the jobs that still use it.
func (c *Client) DeleteCalendar(ctx context.Context, name string) error {
	_, err := c.do(ctx, request{method: http.MethodDelete, path: calendarPath(name)})
	return err
}

// PauseJob pauses a job's schedule with a note (manual triggers still run); ResumeJob ends the pause.
func (c *Client) PauseJob(ctx context.Context, job, note string) error {
	_, err := c.do(ctx, request{method: http.MethodPost, path: "/api/v1/jobs/" + url.PathEscape(job) + "/pause",
		body: map[string]string{"note": note}})
	return err
}

// ResumeJob ends a job's pause.
func (c *Client) ResumeJob(ctx context.Context, job string) error {
	_, err := c.do(ctx, request{method: http.MethodPost, path: "/api/v1/jobs/" + url.PathEscape(job) + "/resume"})
	return err
}

// JobNextFires returns up to count of a job's effective next fires.
func (c *Client) JobNextFires(ctx context.Context, job string, count int) (*NextFires, error) {
	var out NextFires
	q := url.Values{"count": {strconv.Itoa(count)}}
	if _, err := c.do(ctx, request{method: http.MethodGet, path: "/api/v1/jobs/" + url.PathEscape(job) + "/next", query: q, out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}
