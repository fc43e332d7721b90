package api

import (
	"bytes"
	"context"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/ejserver/ejserver/internal/calendar"
	"github.com/ejserver/ejserver/internal/calendarstore"
	"github.com/ejserver/ejserver/internal/service"
)

// CalendarStore is what the calendar routes need (calendarstore.Store satisfies it).
type CalendarStore interface {
	List(ctx context.Context) ([]calendarstore.Stored, error)
	Get(ctx context.Context, name string) (calendarstore.Stored, error)
	Create(ctx context.Context, c calendar.Calendar) (calendarstore.Stored, error)
	Replace(ctx context.Context, name string, c calendar.Calendar, check calendarstore.VersionCheck) (calendarstore.Stored, error)
	Delete(ctx context.Context, name string) error
}

// Steering is what the pause, resume and next-fires routes need (service.Service satisfies it).
type Steering interface {
	PauseJob(ctx context.Context, name, by, note string) (service.JobView, error)
	ResumeJob(ctx context.Context, name string) (service.JobView, error)
	JobNextFires(ctx context.Context, name string, from time.Time, count int) (service.NextFires, error)
}

// CalendarList is every calendar, by name.
type CalendarList struct {
	Items []calendarstore.Stored `json:"items"`
}

// PauseRequest is the body of a pause: why.
type PauseRequest struct {
	Note string `json:"note"`
}

type steerHandlers struct {
	cals  CalendarStore
	steer Steering
}

func steerRoutes(g *echo.Group, cals CalendarStore, steer Steering) {
	h := &steerHandlers{cals: cals, steer: steer}
	if cals != nil {
		g.POST("/calendars", h.create)
		g.GET("/calendars", h.list)
		g.GET("/calendars/:name", h.get)
		g.PUT("/calendars/:name", h.replace)
		g.DELETE("/calendars/:name", h.delete)
	}
	if steer != nil {
		g.POST("/jobs/:jobName/pause", h.pause)
		g.POST("/jobs/:jobName/resume", h.resume)
		g.GET("/jobs/:jobName/next", h.next)
	}
}

func decodeCalendar(c echo.Context) (calendar.Calendar, error) {
	var cal calendar.Calendar
	if ct := c.Request().Header.Get(echo.HeaderContentType); ct != "" && !strings.HasPrefix(ct, echo.MIMEApplicationJSON) {
		return cal, echo.NewHTTPError(http.StatusUnsupportedMediaType, "send application/json")
	}
	b, err := readBody(c)
	if err != nil {
		return cal, err
	}
	return cal, strictJSON(b, &cal)
}

// create godoc
//
//	@Summary		Create a calendar
//	@Description	Registers a cluster-wide named calendar (Quartz's HolidayCalendar and AnnualCalendar): single dates (YYYY-MM-DD), inclusive ranges and annual days (MM-DD), read in its timeZone (default UTC). Jobs name it in excludeCalendars or includeCalendars; every peer applies a change at once.
//	@Tags			calendars
//	@Accept			json
//	@Produce		json,application/problem+json
//	@Param			calendar	body		calendar.Calendar	true	"the calendar"
//	@Success		201			{object}	calendarstore.Stored
//	@Header			201			{string}	ETag		"the calendar's version"
//	@Header			201			{string}	Location	"the calendar's URL"
//	@Failure		400			{object}	Problem	"invalid field, unknown field or wrong type (field names it)"
//	@Failure		401			{object}	Problem	"no or unknown token"
//	@Failure		403			{object}	Problem	"a viewer or operator token"
//	@Failure		404			{object}	Problem	"a scoped token: calendars are cluster-wide"
//	@Failure		409			{object}	Problem	"a calendar with this name exists"
//	@Failure		503			{object}	Problem	"ZooKeeper unavailable"
//	@Security		BearerAuth
//	@Router			/api/v1/calendars [post]
func (h *steerHandlers) create(c echo.Context) error {
	cal, err := decodeCalendar(c)
	if err != nil {
		return err
	}
	st, err := h.cals.Create(c.Request().Context(), cal)
	if err != nil {
		return err
	}
	c.Response().Header().Set("ETag", etag(st.Version))
	c.Response().Header().Set("Location", "/api/v1/calendars/"+url.PathEscape(st.Name))
	return c.JSON(http.StatusCreated, st)
}

// list godoc
//
//	@Summary	List calendars
//	@Tags		calendars
//	@Produce	json,application/problem+json
//	@Success	200	{object}	CalendarList
//	@Failure	401	{object}	Problem	"no or unknown token"
//	@Failure	404	{object}	Problem	"a scoped token: calendars are cluster-wide"
//	@Failure	503	{object}	Problem	"ZooKeeper unavailable"
//	@Security	BearerAuth
//	@Router		/api/v1/calendars [get]
func (h *steerHandlers) list(c echo.Context) error {
	all, err := h.cals.List(c.Request().Context())
	if err != nil {
		return err
	}
	if all == nil {
		all = []calendarstore.Stored{}
	}
	return c.JSON(http.StatusOK, CalendarList{Items: all})
}

// get godoc
//
//	@Summary	Get a calendar
//	@Tags		calendars
//	@Produce	json,application/problem+json
//	@Param		name	path		string	true	"calendar name"
//	@Success	200		{object}	calendarstore.Stored
//	@Header		200		{string}	ETag	"the calendar's version"
//	@Failure	401		{object}	Problem	"no or unknown token"
//	@Failure	404		{object}	Problem	"no such calendar, or a scoped token"
//	@Security	BearerAuth
//	@Router		/api/v1/calendars/{name} [get]
func (h *steerHandlers) get(c echo.Context) error {
	st, err := h.cals.Get(c.Request().Context(), c.Param("name"))
	if err != nil {
		return err
	}
	c.Response().Header().Set("ETag", etag(st.Version))
	return c.JSON(http.StatusOK, st)
}

// replace godoc
//
//	@Summary		Replace a calendar
//	@Description	Replaces the calendar's days; every peer applies it to the next fires of the jobs that name it. Send If-Match with the ETag you read (412 if it changed since); "*" matches any version.
//	@Tags			calendars
//	@Accept			json
//	@Produce		json,application/problem+json
//	@Param			name		path		string				true	"calendar name"
//	@Param			If-Match	header		string				false	"the ETag of the version you edited, or *"
//	@Param			calendar	body		calendar.Calendar	true	"the calendar"
//	@Success		200			{object}	calendarstore.Stored
//	@Header			200			{string}	ETag	"the new version"
//	@Failure		400			{object}	Problem	"invalid field, unknown field, wrong type or a rename"
//	@Failure		401			{object}	Problem	"no or unknown token"
//	@Failure		403			{object}	Problem	"a viewer or operator token"
//	@Failure		404			{object}	Problem	"no such calendar, or a scoped token"
//	@Failure		412			{object}	Problem	"If-Match does not match"
//	@Security		BearerAuth
//	@Router			/api/v1/calendars/{name} [put]
func (h *steerHandlers) replace(c echo.Context) error {
	pre, err := parseIfMatch(c.Request().Header)
	if err != nil {
		return err
	}
	cal, err := decodeCalendar(c)
	if err != nil {
		return err
	}
	var check calendarstore.VersionCheck
	if pre != nil {
		check = pre.matches
	}
	st, err := h.cals.Replace(c.Request().Context(), c.Param("name"), cal, check)
	if err != nil {
		return err
	}
	c.Response().Header().Set("ETag", etag(st.Version))
	return c.JSON(http.StatusOK, st)
}

// delete godoc
//
//	@Summary		Delete a calendar
//	@Description	Removes the calendar; refused (409, naming them) while jobs name it in excludeCalendars or includeCalendars.
//	@Tags			calendars
//	@Produce		application/problem+json
//	@Param			name	path	string	true	"calendar name"
//	@Success		204
//	@Failure		401	{object}	Problem	"no or unknown token"
//	@Failure		403	{object}	Problem	"a viewer or operator token"
//	@Failure		404	{object}	Problem	"no such calendar, or a scoped token"
//	@Failure		409	{object}	Problem	"jobs use the calendar (the message names them)"
//	@Security		BearerAuth
//	@Router			/api/v1/calendars/{name} [delete]
func (h *steerHandlers) delete(c echo.Context) error {
	if err := h.cals.Delete(c.Request().Context(), c.Param("name")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// pause godoc
//
//	@Summary		Pause a job's schedule, with a note
//	@Description	Softer than disable: scheduled fires are skipped (skip reason "job paused", metric reason paused, no FIRE_SKIPPED alert) until resume, while manual triggers still run and the sharding stays as it is. The job shows pause {by (the token's actor), note, at}. Pausing a paused job replaces the note.
//	@Tags			jobs
//	@Accept			json
//	@Produce		json,application/problem+json
//	@Param			jobName	path		string			true	"job name"
//	@Param			body	body		PauseRequest	false	"why"
//	@Success		200		{object}	Job
//	@Header			200		{string}	ETag	"the job's new version"
//	@Failure		400		{object}	Problem	"note too long, or an unknown field"
//	@Failure		401		{object}	Problem	"no or unknown token"
//	@Failure		403		{object}	Problem	"a viewer token"
//	@Failure		404		{object}	Problem	"no such job"
//	@Security		BearerAuth
//	@Router			/api/v1/jobs/{jobName}/pause [post]
func (h *steerHandlers) pause(c echo.Context) error {
	var req PauseRequest
	b, err := readBody(c)
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(b)) > 0 {
		if err := strictJSON(b, &req); err != nil {
			return err
		}
	}
	t, _ := callerOf(c)
	by := t.Name
	if by == "" {
		by = "anonymous (no tokens configured)"
	}
	return answerJob(c)(h.steer.PauseJob(c.Request().Context(), c.Param("jobName"), by, req.Note))
}

// resume godoc
//
//	@Summary		Resume a paused job
//	@Description	The job's next scheduled fire runs; fires skipped while it was paused are not made up.
//	@Tags			jobs
//	@Produce		json,application/problem+json
//	@Param			jobName	path		string	true	"job name"
//	@Success		200		{object}	Job
//	@Header			200		{string}	ETag	"the job's new version"
//	@Failure		401		{object}	Problem	"no or unknown token"
//	@Failure		403		{object}	Problem	"a viewer token"
//	@Failure		404		{object}	Problem	"no such job"
//	@Security		BearerAuth
//	@Router			/api/v1/jobs/{jobName}/resume [post]
func (h *steerHandlers) resume(c echo.Context) error {
	return answerJob(c)(h.steer.ResumeJob(c.Request().Context(), c.Param("jobName")))
}

// next godoc
//
//	@Summary		A job's effective next fires
//	@Description	The fires of the job's cron that will run: its excludeCalendars and includeCalendars applied, none after endAt, at most its remaining fires, none while paused (pause says why).
//	@Tags			jobs
//	@Produce		json,application/problem+json
//	@Param			jobName	path		string	true	"job name"
//	@Param			from	query		string	false	"RFC 3339 start (default now)"
//	@Param			count	query		int		false	"how many, 1-100 (default 5)"
//	@Success		200		{object}	service.NextFires
//	@Failure		400		{object}	Problem	"a bad from or count"
//	@Failure		401		{object}	Problem	"no or unknown token"
//	@Failure		404		{object}	Problem	"no such job"
//	@Security		BearerAuth
//	@Router			/api/v1/jobs/{jobName}/next [get]
func (h *steerHandlers) next(c echo.Context) error {
	from, err := timeParam(c, "from")
	if err != nil {
		return err
	}
	count, err := intParam(c, "count", 5)
	if err != nil {
		return err
	}
	out, err := h.steer.JobNextFires(c.Request().Context(), c.Param("jobName"), from, count)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}
