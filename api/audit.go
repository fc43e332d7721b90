package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/audit"
	"github.com/ejserver/ejserver/internal/history"
)

// AuditRecorder is where the API records the changes it makes and the requests it refuses
// (audit.Recorder satisfies it).
type AuditRecorder interface {
	Record(ctx context.Context, e audit.Entry) error
	Deny(ctx context.Context, d audit.Denial)
}

// AuditLog reads the audit trail (history.Store satisfies it).
type AuditLog interface {
	ListAudit(ctx context.Context, f history.AuditFilter) (history.AuditPage, error)
}

// AuditList is one page of the audit trail, newest first.
type AuditList struct {
	Items []audit.Entry `json:"items"`
	// NextCursor fetches the next (older) page; absent on the last page.
	NextCursor string `json:"nextCursor,omitempty"`
}

// auditedRoutes are the routes whose requests are recorded, by routeKey, with what each is.
var auditedRoutes = map[string]audit.Action{
	"POST /api/v1/jobs":                      audit.JobCreate,
	"PUT /api/v1/jobs/:":                     audit.JobReplace,
	"DELETE /api/v1/jobs/:":                  audit.JobDelete,
	"POST /api/v1/jobs/:/trigger":            audit.JobTrigger,
	"POST /api/v1/jobs/:/disable":            audit.JobDisable,
	"POST /api/v1/jobs/:/enable":             audit.JobEnable,
	"POST /api/v1/jobs/:/sharding/:/disable": audit.ItemDisable,
	"POST /api/v1/jobs/:/sharding/:/enable":  audit.ItemEnable,
	"POST /api/v1/jobs/:/servers/:/disable":  audit.JobServerOff,
	"POST /api/v1/jobs/:/servers/:/enable":   audit.JobServerOn,
	"POST /api/v1/servers/:/disable":         audit.ServerDisable,
	"POST /api/v1/servers/:/enable":          audit.ServerEnable,
	"POST /api/v1/channels":                  audit.ChannelCreate,
	"PUT /api/v1/channels/:":                 audit.ChannelReplace,
	"DELETE /api/v1/channels/:":              audit.ChannelDelete,
	"POST /api/v1/channels/:/test":           audit.ChannelTest,
	"POST /api/v1/workflows":                 audit.WorkflowCreate,
	"PUT /api/v1/workflows/:":                audit.WorkflowReplace,
	"DELETE /api/v1/workflows/:":             audit.WorkflowDelete,
	"POST /api/v1/workflows/:/runs":          audit.WorkflowTrigger,
	"POST /api/v1/workflows/:/runs/:/cancel": audit.WorkflowCancel,
	"POST /api/v1/workflows/:/runs/:/retry":  audit.WorkflowRetry,
	"POST /api/v1/jobs/:/backfill":           audit.JobBackfill,
	"POST /api/v1/jobs/:/backfill/:/cancel":  audit.JobBackfillCancel,
	"POST /api/v1/executions/:/replay":       audit.ExecutionReplay,
	"POST /api/v1/calendars":                 audit.CalendarCreate,
	"PUT /api/v1/calendars/:":                audit.CalendarReplace,
	"DELETE /api/v1/calendars/:":             audit.CalendarDelete,
	"POST /api/v1/jobs/:/pause":              audit.JobPause,
	"POST /api/v1/jobs/:/resume":             audit.JobResume,
}

// auditDenials records the 401s and 403s of /api/v1, folded per source per minute by the recorder. It runs
// first on the group, so it sees the token check's answers too.
func auditDenials(rec AuditRecorder) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			err := next(c)
			var ae *authError
			if errors.As(err, &ae) {
				t, _ := callerOf(c)
				r := c.Request()
				rec.Deny(r.Context(), audit.Denial{Source: c.RealIP(), UserAgent: r.UserAgent(), Actor: t.Name,
					Status: ae.status, Method: r.Method, Path: r.URL.Path})
			}
			return err
		}
	}
}

// auditor records every change made through /api/v1: who, from where, what, the outcome, and for config
// changes the field-level difference (read before and after the change; secrets only as "changed"). It
// runs after the access check, so a refused request reads nothing.
type auditor struct {
	rec      AuditRecorder
	svc      Service
	channels Channels
}

func (a *auditor) middleware(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		action, ok := auditedRoutes[routeKey(c.Request().Method, c.Path())]
		if !ok {
			return next(c)
		}
		ctx := c.Request().Context()
		e := a.entry(c, action)
		if strings.HasPrefix(string(action), "workflow.") {
			e.Detail = c.Param("run")
		}
		var body []byte
		if action == audit.JobCreate || action == audit.JobTrigger || action == audit.ChannelCreate || action == audit.WorkflowCreate ||
			action == audit.CalendarCreate {
			body = peekBody(c)
		}
		var before map[string]audit.Field
		hadBefore := false
		if action != audit.JobCreate && action != audit.ChannelCreate {
			// a creation that succeeds had nothing before it: no read (one ZooKeeper read less a creation)
			before, hadBefore = a.fields(ctx, action, e)
		}
		err := next(c)
		e.Status = c.Response().Status
		if err != nil {
			e.Status = problemFor(err).Status
		}
		if e.Status >= 400 {
			e.Outcome = audit.OutcomeFailed
		}
		a.describe(&e, body)
		if e.Outcome == audit.OutcomeOK {
			after, hasAfter := a.fields(ctx, action, e)
			if hadBefore || hasAfter {
				e.Changes = audit.Diff(before, after)
			}
		}
		_ = a.rec.Record(ctx, e) // logged by the recorder; the change is made either way
		return err
	}
}

func (a *auditor) entry(c echo.Context, action audit.Action) audit.Entry {
	r := c.Request()
	t, authenticated := callerOf(c)
	e := audit.Entry{Action: action, Actor: t.Name, ActorKind: audit.ActorToken, Role: string(t.Role),
		Scope: t.Scope.String(), Source: c.RealIP(), UserAgent: r.UserAgent(),
		RequestID: c.Response().Header().Get(echo.HeaderXRequestID), Outcome: audit.OutcomeOK,
		Job: c.Param("jobName"), Channel: c.Param("name")}
	switch {
	case !authenticated:
		e.ActorKind = audit.ActorOpen
	case r.Header.Get(echo.HeaderAuthorization) == "":
		e.ActorKind = audit.ActorCertificate
	}
	if ip := c.Param("ip"); ip != "" {
		e.Server = ip
	}
	if s := c.Param("item"); s != "" {
		if n, err := strconv.Atoi(s); err == nil {
			e.Item = &n
		}
	}
	return e
}

// peekBody reads the request body (bounded by the group's body limit) and puts it back for the handler.
func peekBody(c echo.Context) []byte {
	r := c.Request()
	b, err := io.ReadAll(r.Body)
	r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(b), errReader{err}))
	return b
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	return 0, io.EOF
}

// describe fills what the request body says: the new job's or channel's name, a trigger's override and items.
func (a *auditor) describe(e *audit.Entry, body []byte) {
	if strings.HasPrefix(string(e.Action), "workflow.") {
		describeWorkflow(e, body)
		return
	}
	switch e.Action {
	case audit.JobCreate:
		var v struct {
			JobName string `json:"jobName"`
		}
		if json.Unmarshal(body, &v) == nil && e.Job == "" {
			e.Job = v.JobName
		}
	case audit.ChannelCreate:
		var v struct {
			Name string `json:"name"`
		}
		if json.Unmarshal(body, &v) == nil {
			e.Channel = v.Name
		}
	case audit.CalendarCreate, audit.CalendarReplace, audit.CalendarDelete:
		name := e.Channel // the route's :name
		var v struct {
			Name string `json:"name"`
		}
		if name == "" && json.Unmarshal(body, &v) == nil {
			name = v.Name
		}
		e.Channel, e.Detail = "", "calendar "+name
	case audit.JobTrigger:
		var v struct {
			JobParameter *string `json:"jobParameter"`
			Items        []int   `json:"items"`
		}
		if len(bytes.TrimSpace(body)) == 0 || json.Unmarshal(body, &v) != nil {
			return
		}
		if v.JobParameter != nil {
			e.Detail = fmt.Sprintf("jobParameter override %q", *v.JobParameter)
		}
		if len(v.Items) > 0 {
			if e.Detail != "" {
				e.Detail += "; "
			}
			e.Detail += fmt.Sprintf("items %v", v.Items)
		}
	}
}

// fields reads the config an action changes, as audit.Diff compares it; false when there is none (not
// found, or an action that changes no config).
func (a *auditor) fields(ctx context.Context, action audit.Action, e audit.Entry) (map[string]audit.Field, bool) {
	switch action {
	case audit.JobCreate, audit.JobReplace, audit.JobDelete, audit.JobEnable, audit.JobDisable, audit.JobPause, audit.JobResume:
		if e.Job == "" {
			return nil, false
		}
		cfg, err := a.svc.JobConfig(ctx, e.Job)
		if err != nil {
			return nil, false
		}
		return audit.JobFields(cfg), true
	case audit.ChannelCreate, audit.ChannelReplace, audit.ChannelDelete:
		if e.Channel == "" || a.channels == nil {
			return nil, false
		}
		ch, err := a.channels.Get(ctx, e.Channel)
		if err != nil {
			return nil, false
		}
		return audit.ChannelFields(ch.Channel), true
	}
	return nil, false
}

// listAudit godoc
//
//	@Summary		List the audit trail
//	@Description	Who changed what, when, from where, and the outcome, newest first, filtered and paged with a cursor: every change made through the API (with the field-level difference of config changes; secrets only as "changed"), the jobs-file applies at start-up, refused requests (401/403, folded per source per minute) and changes made directly in ZooKeeper (actor "zookeeper"). Viewers may read it; a scoped token sees only its jobs' entries. Entries cannot be changed or deleted through the API: they go with the history's retention.
//	@Tags			audit
//	@Produce		json,application/problem+json
//	@Param			from	query		string	false	"RFC 3339: recorded at or after"
//	@Param			to		query		string	false	"RFC 3339: recorded before"
//	@Param			actor	query		string	false	"token or certificate name, zookeeper or jobs-file"
//	@Param			action	query		string	false	"action, e.g. job.replace, job.disable, auth.denied, zookeeper.job.config"
//	@Param			job		query		string	false	"job name"
//	@Param			cursor	query		string	false	"nextCursor of the previous page"
//	@Param			limit	query		int		false	"page size, 1-500 (default 50)"
//	@Success		200		{object}	AuditList
//	@Failure		400		{object}	Problem	"a bad filter, cursor or limit"
//	@Failure		401		{object}	Problem	"no or unknown token"
//	@Failure		503		{object}	Problem	"no history store"
//	@Security		BearerAuth
//	@Router			/api/v1/audit [get]
func (h *handlers) listAudit(log AuditLog) echo.HandlerFunc {
	return func(c echo.Context) error {
		f := history.AuditFilter{Actor: c.QueryParam("actor"), Action: audit.Action(c.QueryParam("action")),
			JobName: c.QueryParam("job"), Cursor: c.QueryParam("cursor"), Jobs: h.jobSet(grantOf(c).Scope)}
		var err error
		if f.From, err = timeParam(c, "from"); err != nil {
			return err
		}
		if f.To, err = timeParam(c, "to"); err != nil {
			return err
		}
		if f.Limit, err = limitParamOf(c, history.DefaultLimit, history.MaxLimit); err != nil {
			return err
		}
		if log == nil {
			return ejserver.Errorf(ejserver.EUNAVAILABLE, "no history store: the audit trail is kept in it")
		}
		page, err := log.ListAudit(c.Request().Context(), f)
		if err != nil {
			return err
		}
		items := page.Items
		if items == nil {
			items = []audit.Entry{}
		}
		return c.JSON(http.StatusOK, AuditList{Items: items, NextCursor: page.NextCursor})
	}
}

// describeWorkflow names the workflow (and run) of a workflow action in Detail (the path's name is not a
// channel's).
func describeWorkflow(e *audit.Entry, body []byte) {
	name := e.Channel
	e.Channel = ""
	if e.Action == audit.WorkflowCreate {
		var v struct {
			Name string `json:"name"`
		}
		if json.Unmarshal(body, &v) == nil {
			name = v.Name
		}
	}
	run := e.Detail // the middleware put the path's run id there
	e.Detail = "workflow " + name
	if run != "" {
		e.Detail += ", run " + run
	}
}
