package api

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/history"
	"github.com/ejserver/ejserver/internal/service"
)

// ServerList is a page of server IPs, in address order.
type ServerList struct {
	Items []service.ServerView `json:"items"`
	// NextCursor fetches the next page (pass it as cursor); absent on the last page.
	NextCursor string `json:"nextCursor,omitempty"`
}

// InstanceList is a page of ejserver peers, by instance id.
type InstanceList struct {
	Items []service.InstanceView `json:"items"`
	// NextCursor fetches the next page (pass it as cursor); absent on the last page.
	NextCursor string `json:"nextCursor,omitempty"`
}

// ServerChange reports a server disable/enable across jobs.
type ServerChange struct {
	IP       string `json:"ip"`
	Disabled bool   `json:"disabled"`
	// Jobs counts the jobs whose servers/{ip} node was written.
	Jobs int `json:"jobs"`
}

// ExecutionList is a page of executions, newest first.
type ExecutionList struct {
	Items []ejserver.Execution `json:"items"`
	// NextCursor fetches the next (older) page; absent on the last page.
	NextCursor string `json:"nextCursor,omitempty"`
}

// TraceList lists status traces.
type TraceList struct {
	Items []ejserver.StatusTrace `json:"items"`
}

// CronPreview is the next fire times of an expression.
type CronPreview struct {
	Cron        string `json:"cron"`
	TimeZone    string `json:"timeZone"`
	Description string `json:"description,omitempty"`
	// ExcludeCalendars and IncludeCalendars are the calendars applied to Next, as asked.
	ExcludeCalendars []string    `json:"excludeCalendars,omitempty"`
	IncludeCalendars []string    `json:"includeCalendars,omitempty"`
	Next             []time.Time `json:"next"`
}

// servers godoc
//
//	@Summary	List servers
//	@Description	Every server IP of the namespace, in address order: its instances, how many jobs it serves and which jobs disabled it.
//	@Tags		servers
//	@Produce	json,application/problem+json
//	@Param		cursor	query		string	false	"nextCursor of the previous page"
//	@Param		limit	query		int		false	"page size, 1-1000 (default 100)"
//	@Success	200		{object}	ServerList
//	@Failure	400		{object}	Problem	"a bad limit"
//	@Failure	401		{object}	Problem	"no or unknown token"
//	@Failure	404		{object}	Problem	"a scoped token: the cluster's servers and instances are not its"
//	@Security	BearerAuth
//	@Router		/api/v1/servers [get]
func (h *handlers) servers(c echo.Context) error {
	limit, err := limitParam(c)
	if err != nil {
		return err
	}
	list, err := h.svc.Servers(c.Request().Context())
	if err != nil {
		return err
	}
	items, next := pageAfter(list, func(v service.ServerView) string { return v.IP }, compareIPs, c.QueryParam("cursor"), limit)
	return c.JSON(http.StatusOK, ServerList{Items: items, NextCursor: next})
}

// disableServer godoc
//
//	@Summary	Disable a server for every job
//	@Description	Writes DISABLED to servers/{ip} of every job the server runs: its instances stop running them and stop leading them.
//	@Tags		servers
//	@Produce	json,application/problem+json
//	@Param		ip	path		string	true	"server IP"
//	@Success	200	{object}	ServerChange
//	@Failure	400	{object}	Problem	"ip is not an IP address"
//	@Failure	401	{object}	Problem	"no or unknown token"
//	@Failure	403	{object}	Problem	"not an admin token"
//	@Failure	404	{object}	Problem	"a scoped token: a change to every job is not its"
//	@Security	BearerAuth
//	@Router		/api/v1/servers/{ip}/disable [post]
func (h *handlers) disableServer(c echo.Context) error { return h.setServer(c, true) }

// enableServer godoc
//
//	@Summary	Enable a server for every job
//	@Description	Writes ENABLED to servers/{ip} of every job: its instances run them again from the next resharding.
//	@Tags		servers
//	@Produce	json,application/problem+json
//	@Param		ip	path		string	true	"server IP"
//	@Success	200	{object}	ServerChange
//	@Failure	400	{object}	Problem	"ip is not an IP address"
//	@Failure	401	{object}	Problem	"no or unknown token"
//	@Failure	403	{object}	Problem	"not an admin token"
//	@Failure	404	{object}	Problem	"a scoped token: a change to every job is not its"
//	@Security	BearerAuth
//	@Router		/api/v1/servers/{ip}/enable [post]
func (h *handlers) enableServer(c echo.Context) error { return h.setServer(c, false) }

func (h *handlers) setServer(c echo.Context, disabled bool) error {
	n, err := h.svc.SetServerDisabled(c.Request().Context(), c.Param("ip"), disabled)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, ServerChange{IP: c.Param("ip"), Disabled: disabled, Jobs: n})
}

// instances godoc
//
//	@Summary	List ejserver instances
//	@Description	The peers of the namespace by instance id, with how many jobs each runs and leads.
//	@Tags		servers
//	@Produce	json,application/problem+json
//	@Param		cursor	query		string	false	"nextCursor of the previous page"
//	@Param		limit	query		int		false	"page size, 1-1000 (default 100)"
//	@Success	200		{object}	InstanceList
//	@Failure	400		{object}	Problem	"a bad limit"
//	@Failure	401		{object}	Problem	"no or unknown token"
//	@Failure	404		{object}	Problem	"a scoped token: the cluster's servers and instances are not its"
//	@Security	BearerAuth
//	@Router		/api/v1/instances [get]
func (h *handlers) instances(c echo.Context) error {
	limit, err := limitParam(c)
	if err != nil {
		return err
	}
	list, err := h.svc.Instances(c.Request().Context())
	if err != nil {
		return err
	}
	items, next := pageAfter(list, func(v service.InstanceView) string { return v.InstanceID }, strings.Compare, c.QueryParam("cursor"), limit)
	return c.JSON(http.StatusOK, InstanceList{Items: items, NextCursor: next})
}

// executions godoc
//
//	@Summary	List executions
//	@Description	Executions of every job, newest first, filtered and paged with a cursor.
//	@Tags		executions
//	@Produce	json,application/problem+json
//	@Param		job		query		string	false	"job name"
//	@Param		item	query		int		false	"sharding item"
//	@Param		success	query		bool	false	"true: succeeded, false: failed"
//	@Param		source	query		string	false	"NORMAL_TRIGGER, MISFIRE, FAILOVER, MANUAL or BACKFILL"
//	@Param		instance	query	string	false	"instance id"
//	@Param		from	query		string	false	"RFC 3339: started at or after"
//	@Param		to		query		string	false	"RFC 3339: started before"
//	@Param		cursor	query		string	false	"nextCursor of the previous page"
//	@Param		limit	query		int		false	"page size, 1-500 (default 50)"
//	@Success	200		{object}	ExecutionList
//	@Failure	400		{object}	Problem	"a bad filter, cursor or limit"
//	@Failure	401		{object}	Problem	"no or unknown token"
//	@Failure	503		{object}	Problem	"no history store"
//	@Security	BearerAuth
//	@Router		/api/v1/executions [get]
func (h *handlers) executions(c echo.Context) error {
	return h.listExecutions(c, c.QueryParam("job"))
}

// jobExecutions godoc
//
//	@Summary	List a job's executions
//	@Description	The job's executions, newest first, filtered and paged with a cursor (the same as /api/v1/executions?job=).
//	@Tags		executions
//	@Produce	json,application/problem+json
//	@Param		jobName	path		string	true	"job name"
//	@Param		item	query		int		false	"sharding item"
//	@Param		success	query		bool	false	"true: succeeded, false: failed"
//	@Param		source	query		string	false	"NORMAL_TRIGGER, MISFIRE, FAILOVER, MANUAL or BACKFILL"
//	@Param		instance	query	string	false	"instance id"
//	@Param		from	query		string	false	"RFC 3339: started at or after"
//	@Param		to		query		string	false	"RFC 3339: started before"
//	@Param		scheduledAt	query	string	false	"RFC 3339: one fire's items (those scheduled at that time)"
//	@Param		cursor	query		string	false	"nextCursor of the previous page"
//	@Param		limit	query		int		false	"page size, 1-500 (default 50)"
//	@Success	200		{object}	ExecutionList
//	@Failure	400		{object}	Problem	"a bad filter, cursor or limit"
//	@Failure	401		{object}	Problem	"no or unknown token"
//	@Failure	404		{object}	Problem	"a job outside the token's scope (a scoped token)"
//	@Failure	503		{object}	Problem	"no history store"
//	@Security	BearerAuth
//	@Router		/api/v1/jobs/{jobName}/executions [get]
func (h *handlers) jobExecutions(c echo.Context) error {
	return h.listExecutions(c, c.Param("jobName"))
}

func (h *handlers) listExecutions(c echo.Context, job string) error {
	f := history.ExecutionFilter{JobName: job, Source: ejserver.Source(c.QueryParam("source")),
		InstanceID: c.QueryParam("instance"), Cursor: c.QueryParam("cursor"), Jobs: h.jobSet(grantOf(c).Scope)}
	if s := c.QueryParam("item"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return ejserver.Invalid("item", "%q is not an item number", s)
		}
		f.ShardingItem = &n
	}
	if s := c.QueryParam("success"); s != "" {
		b, err := strconv.ParseBool(s)
		if err != nil {
			return ejserver.Invalid("success", "must be true or false")
		}
		f.Success = &b
	}
	var err error
	if f.From, err = timeParam(c, "from"); err != nil {
		return err
	}
	if f.To, err = timeParam(c, "to"); err != nil {
		return err
	}
	if f.ScheduledAt, err = timeParam(c, "scheduledAt"); err != nil {
		return err
	}
	if f.Limit, err = limitParamOf(c, history.DefaultLimit, history.MaxLimit); err != nil {
		return err
	}
	page, err := h.svc.Executions(c.Request().Context(), f)
	if err != nil {
		return err
	}
	items := page.Items
	if items == nil {
		items = []ejserver.Execution{}
	}
	return c.JSON(http.StatusOK, ExecutionList{Items: items, NextCursor: page.NextCursor})
}

// execution godoc
//
//	@Summary	Get an execution
//	@Description	One item of one fire: where and when it ran, the HTTP outcome, attempts and the start of the receiver's answer.
//	@Tags		executions
//	@Produce	json,application/problem+json
//	@Param		id	path		string	true	"execution id (the webhook-id)"
//	@Success	200	{object}	ejserver.Execution
//	@Failure	401	{object}	Problem	"no or unknown token"
//	@Failure	404	{object}	Problem	"no such execution, or (for a scoped token) another job's"
//	@Failure	503	{object}	Problem	"no history store"
//	@Security	BearerAuth
//	@Router		/api/v1/executions/{id} [get]
func (h *handlers) execution(c echo.Context) error {
	e, err := h.svc.Execution(c.Request().Context(), c.Param("id"))
	if err != nil {
		return err
	}
	// another job's execution is "not found", word for word as one that does not exist
	if ok, err := h.sees(c.Request().Context(), grantOf(c).Scope, e.JobName); err != nil {
		return err
	} else if !ok {
		return ejserver.Errorf(ejserver.ENOTFOUND, "execution %q not found", c.Param("id"))
	}
	return c.JSON(http.StatusOK, e)
}

// jobTraces godoc
//
//	@Summary	A job's status traces
//	@Description	ElasticJob's JOB_STATUS_TRACE_LOG: the state changes of each task (one fire on one instance). Peers started with --history-status-traces=false record none (older rows stay readable).
//	@Tags		executions
//	@Produce	json,application/problem+json
//	@Param		jobName	path		string	true	"job name"
//	@Param		taskId	query		string	false	"one task"
//	@Param		limit	query		int		false	"how many, 1-500 (default 50)"
//	@Success	200		{object}	TraceList
//	@Failure	400		{object}	Problem	"a bad limit"
//	@Failure	401		{object}	Problem	"no or unknown token"
//	@Failure	404		{object}	Problem	"a job outside the token's scope (a scoped token)"
//	@Failure	503		{object}	Problem	"no history store"
//	@Security	BearerAuth
//	@Router		/api/v1/jobs/{jobName}/traces [get]
func (h *handlers) jobTraces(c echo.Context) error {
	limit, err := limitParamOf(c, history.DefaultLimit, history.MaxLimit)
	if err != nil {
		return err
	}
	list, err := h.svc.Traces(c.Request().Context(), history.TraceFilter{JobName: c.Param("jobName"), TaskID: c.QueryParam("taskId"), Limit: limit})
	if err != nil {
		return err
	}
	if list == nil {
		list = []ejserver.StatusTrace{}
	}
	return c.JSON(http.StatusOK, TraceList{Items: list})
}

// cronNext godoc
//
//	@Summary	Preview a cron expression
//	@Description	The next fire times of an expression (5-field Unix, 6/7-field Quartz, or a descriptor) in a time zone, computed by the scheduler's own code. With excludeCalendars or includeCalendars (names of the cluster's calendars, comma-separated or the parameter repeated) the fires are those a job with these calendars would run, by the same code as GET /api/v1/jobs/{jobName}/next. A bad expression gets 400 naming the part at fault; an unknown calendar gets 400 naming it.
//	@Tags		cron
//	@Produce	json,application/problem+json
//	@Param		cron		query		string	true	"the expression"
//	@Param		timeZone	query		string	false	"IANA name or GMT+8 form (default UTC)"
//	@Param		from		query		string	false	"RFC 3339 start (default now)"
//	@Param		count		query		int		false	"how many, 1-100 (default 5)"
//	@Param		excludeCalendars	query	string	false	"calendars whose days are skipped (comma-separated)"
//	@Param		includeCalendars	query	string	false	"calendars the fires are restricted to (comma-separated)"
//	@Success	200			{object}	CronPreview
//	@Failure	400			{object}	Problem	"a bad expression, time zone, from, count or an unknown calendar (field names it)"
//	@Failure	401			{object}	Problem	"no or unknown token"
//	@Security	BearerAuth
//	@Router		/api/v1/cron/next [get]
func (h *handlers) cronNext(c echo.Context) error {
	from, err := timeParam(c, "from")
	if err != nil {
		return err
	}
	count, err := intParam(c, "count", 5)
	if err != nil {
		return err
	}
	q := service.CronQuery{Expr: c.QueryParam("cron"), TimeZone: c.QueryParam("timeZone"), From: from, Count: count,
		ExcludeCalendars: listParam(c, "excludeCalendars"), IncludeCalendars: listParam(c, "includeCalendars")}
	next, desc, err := h.svc.CronNext(c.Request().Context(), q)
	if err != nil {
		return err
	}
	tz := q.TimeZone
	if tz == "" {
		tz = "UTC"
	}
	return c.JSON(http.StatusOK, CronPreview{Cron: q.Expr, TimeZone: tz, Description: desc, Next: next,
		ExcludeCalendars: q.ExcludeCalendars, IncludeCalendars: q.IncludeCalendars})
}

// listParam reads a list query parameter given comma-separated, repeated, or both; blanks are dropped.
func listParam(c echo.Context, name string) []string {
	var out []string
	for _, v := range c.QueryParams()[name] {
		for s := range strings.SplitSeq(v, ",") {
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
	}
	return out
}

func timeParam(c echo.Context, name string) (time.Time, error) {
	s := c.QueryParam(name)
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, ejserver.Invalid(name, "%q is not an RFC 3339 time (2026-11-21T10:00:00Z)", s)
	}
	return t, nil
}

// HealthReport is the /readyz body.
type HealthReport struct {
	Ready  bool           `json:"ready"`
	Checks map[string]any `json:"checks"`
}

// healthz godoc
//
//	@Summary	Liveness
//	@Description	200 while the process serves HTTP; never needs a token.
//	@Tags		health
//	@Produce	json
//	@Success	200	{object}	map[string]string
//	@Router		/healthz [get]
func (h *handlers) healthz(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]string{"status": "ok"})
}

// readyz godoc
//
//	@Summary	Readiness
//	@Description	Ready when this peer holds a ZooKeeper session; the history store's state (ok, or degraded while dispatch goes on) is reported in the body. Never needs a token.
//	@Tags		health
//	@Produce	json
//	@Success	200	{object}	HealthReport
//	@Failure	503	{object}	HealthReport
//	@Router		/readyz [get]
func (h *handlers) readyz(c echo.Context) error {
	if h.health == nil {
		return c.JSON(http.StatusOK, HealthReport{Ready: true, Checks: map[string]any{}})
	}
	ok, checks := h.health.Ready(c.Request().Context())
	status := http.StatusOK
	if !ok {
		status = http.StatusServiceUnavailable
	}
	return c.JSON(status, HealthReport{Ready: ok, Checks: checks})
}
