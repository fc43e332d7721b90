package api

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/history"
	"github.com/ejserver/ejserver/internal/loadahead"
)

// The console's charts: a job's stats and points, the cluster's stats, the schedule's load ahead.

// JobWindowStats is a job's window of executions, per bucket and in total. Percentiles are nearest-rank over the
// rows (milliseconds); lateness is an item's start minus its fire's scheduled time.
type JobWindowStats struct {
	history.JobStats
	// SharedHistory is true when the history is the whole cluster's (PostgreSQL); false when it is this
	// peer's alone (SQLite: each peer records only the items it ran).
	SharedHistory bool `json:"sharedHistory"`
}

// JobPoints is a job's executions in the window, oldest first, as the job chart draws them.
type JobPoints struct {
	history.PointList
	SharedHistory bool `json:"sharedHistory"`
}

// ClusterStats is every job's window: fires and failures per bucket, and what each peer executed.
type ClusterStats struct {
	history.ClusterStats
	SharedHistory bool `json:"sharedHistory"`
}

// LoadAhead is the items that fall on each second of the horizon, from the enabled jobs' cron schedules.
type LoadAhead struct {
	loadahead.Load
}

// spanParam reads a duration: Go's form (90m, 1h30m) or whole days (7d).
func spanParam(c echo.Context, name string, def time.Duration) (time.Duration, error) {
	s := c.QueryParam(name)
	if s == "" {
		return def, nil
	}
	if d, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(d)
		if err == nil && n > 0 {
			return time.Duration(n) * 24 * time.Hour, nil
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, ejserver.Invalid(name, "%q is not a positive duration (30s, 5m, 24h, 7d)", s)
	}
	return d, nil
}

// statsQuery reads window (default def), bucket (default defBucket) and to.
func statsQuery(c echo.Context, def, defBucket time.Duration) (history.StatsQuery, time.Duration, error) {
	var q history.StatsQuery
	window, err := spanParam(c, "window", def)
	if err != nil {
		return q, 0, err
	}
	if q.Bucket, err = spanParam(c, "bucket", defBucket); err != nil {
		return q, 0, err
	}
	if q.To, err = timeParam(c, "to"); err != nil {
		return q, 0, err
	}
	return q, window, nil
}

// jobStats godoc
//
//	@Summary	A job's stats
//	@Description	The job's executions that started in the window, per bucket and in total: fires, items by outcome and source, and nearest-rank p50/p99 of duration (ended items) and lateness (start minus scheduled time), computed in SQL. Without to, the window ends at the end of the current bucket. With SQLite the history is this peer's alone (sharedHistory false).
//	@Tags		stats
//	@Produce	json,application/problem+json
//	@Param		jobName	path		string	true	"job name"
//	@Param		window	query		string	false	"how far back: 1s to 31d (default 24h)"
//	@Param		bucket	query		string	false	"bucket width, whole seconds, at most 10,000 buckets (default 5m)"
//	@Param		to		query		string	false	"RFC 3339 end of the window"
//	@Success	200		{object}	JobWindowStats
//	@Failure	400		{object}	Problem	"a bad window, bucket or to (field names it)"
//	@Failure	401		{object}	Problem	"no or unknown token"
//	@Failure	404		{object}	Problem	"a job outside the token's scope (a scoped token)"
//	@Failure	503		{object}	Problem	"no history store"
//	@Security	BearerAuth
//	@Router		/api/v1/jobs/{jobName}/stats [get]
func (h *handlers) jobStats(c echo.Context) error {
	q, window, err := statsQuery(c, 24*time.Hour, 5*time.Minute)
	if err != nil {
		return err
	}
	q.Job = c.Param("jobName")
	st, shared, err := h.svc.JobStats(c.Request().Context(), q, window)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, JobWindowStats{JobStats: st, SharedHistory: shared})
}

// jobPoints godoc
//
//	@Summary	A job's chart points
//	@Description	The job's executions that started in the window, oldest first, at most 20,000 (truncated says there were more): start, scheduled time, duration, lateness, outcome and source, item and instance.
//	@Tags		stats
//	@Produce	json,application/problem+json
//	@Param		jobName	path		string	true	"job name"
//	@Param		window	query		string	false	"how far back: 1s to 31d (default 24h)"
//	@Param		to		query		string	false	"RFC 3339 end of the window (default now)"
//	@Success	200		{object}	JobPoints
//	@Failure	400		{object}	Problem	"a bad window or to (field names it)"
//	@Failure	401		{object}	Problem	"no or unknown token"
//	@Failure	404		{object}	Problem	"a job outside the token's scope (a scoped token)"
//	@Failure	503		{object}	Problem	"no history store"
//	@Security	BearerAuth
//	@Router		/api/v1/jobs/{jobName}/points [get]
func (h *handlers) jobPoints(c echo.Context) error {
	q, window, err := statsQuery(c, 24*time.Hour, 0)
	if err != nil {
		return err
	}
	q.Job, q.Bucket = c.Param("jobName"), 0
	p, shared, err := h.svc.JobPoints(c.Request().Context(), q, window)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, JobPoints{PointList: p, SharedHistory: shared})
}

// clusterStats godoc
//
//	@Summary	The cluster's stats
//	@Description	Every job's executions that started in the window (a scoped token's jobs only): fires, items and failures per bucket, and per peer (instance) the items it executed and their lateness. With SQLite the history is this peer's alone (sharedHistory false).
//	@Tags		stats
//	@Produce	json,application/problem+json
//	@Param		window	query		string	false	"how far back: 1s to 31d (default 1h)"
//	@Param		bucket	query		string	false	"bucket width, whole seconds, at most 10,000 buckets (default 1m)"
//	@Param		to		query		string	false	"RFC 3339 end of the window"
//	@Success	200		{object}	ClusterStats
//	@Failure	400		{object}	Problem	"a bad window, bucket or to (field names it)"
//	@Failure	401		{object}	Problem	"no or unknown token"
//	@Failure	503		{object}	Problem	"no history store"
//	@Security	BearerAuth
//	@Router		/api/v1/stats [get]
func (h *handlers) clusterStats(c echo.Context) error {
	q, window, err := statsQuery(c, time.Hour, time.Minute)
	if err != nil {
		return err
	}
	q.Jobs = h.jobSet(grantOf(c).Scope)
	st, shared, err := h.svc.ClusterStats(c.Request().Context(), q, window)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, ClusterStats{ClusterStats: st, SharedHistory: shared})
}

// loadAhead godoc
//
//	@Summary	The schedule's load ahead
//	@Description	How many shard items fall on each second of the horizon from now, from the enabled jobs' cron schedules (a scoped token's jobs only). Jobs sharing an expression and time zone are computed once; the work is bounded, and skipped counts jobs left out when the bound is reached.
//	@Tags		stats
//	@Produce	json,application/problem+json
//	@Param		horizon	query		string	false	"how far ahead: 1s to 24h (default 1h)"
//	@Success	200		{object}	LoadAhead
//	@Failure	400		{object}	Problem	"a bad horizon"
//	@Failure	401		{object}	Problem	"no or unknown token"
//	@Security	BearerAuth
//	@Router		/api/v1/schedule/load [get]
func (h *handlers) loadAhead(c echo.Context) error {
	horizon, err := spanParam(c, "horizon", time.Hour)
	if err != nil {
		return err
	}
	var visible func(name, label string) bool
	if s := grantOf(c).Scope; !s.Unscoped() {
		visible = s.InScope
	}
	l, err := h.svc.LoadAhead(horizon, visible)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, LoadAhead{Load: l})
}
