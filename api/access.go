package api

import (
	"context"
	"net/http"
	"regexp"

	"github.com/labstack/echo/v4"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/access"
	"github.com/ejserver/ejserver/internal/history"
)

// routeRules gives every route of the API its access rule: what it does (the roles that may) and what it is
// about (what a scoped token sees of it). A route without a rule is refused (403), and TestEveryRouteHasARule
// fails, so a new endpoint cannot ship without a decision for each role and scope. Keys are "METHOD path"
// with every path parameter written ":" (see routeKey), so a parameter's name does not matter.
//
// Cluster-wide objects (servers, instances, alert channels, default alert rules, Prometheus metrics) are
// read by unscoped tokens and written by unscoped admins; a scoped token gets 404 for them. Rows that
// belong to jobs (jobs, executions, notification history) are filtered to a scoped token's jobs.
var routeRules = map[string]access.Rule{
	// no token: health, the spec and its docs page, the console's files
	"GET /healthz":               {Action: access.Read, Reach: access.Public},
	"GET /readyz":                {Action: access.Read, Reach: access.Public},
	"GET /openapi/swagger.json":  {Action: access.Read, Reach: access.Public},
	"GET /openapi/swagger.yaml":  {Action: access.Read, Reach: access.Public},
	"GET /openapi/openapi3.json": {Action: access.Read, Reach: access.Public},
	"GET /swagger/*":             {Action: access.Read, Reach: access.Public},
	"GET /docs":                  {Action: access.Read, Reach: access.Public},
	"GET /*":                     {Action: access.Read, Reach: access.Public}, // the console's files; its data comes from /api/v1

	// an execution's callback token, never an API token
	"POST /api/v1/executions/:/heartbeat": {Action: access.Operate, Reach: access.CallbackToken},
	"POST /api/v1/executions/:/complete":  {Action: access.Operate, Reach: access.CallbackToken},

	// jobs
	"POST /api/v1/jobs":                      {Action: access.Manage, Reach: access.JobRows}, // the new job must be in scope
	"GET /api/v1/jobs":                       {Action: access.Read, Reach: access.JobRows},
	"GET /api/v1/jobs/:":                     {Action: access.Read, Reach: access.OneJob},
	"PUT /api/v1/jobs/:":                     {Action: access.Manage, Reach: access.OneJob}, // in scope before and after
	"DELETE /api/v1/jobs/:":                  {Action: access.Manage, Reach: access.OneJob},
	"POST /api/v1/jobs/:/trigger":            {Action: access.Operate, Reach: access.OneJob},
	"POST /api/v1/jobs/:/disable":            {Action: access.Operate, Reach: access.OneJob},
	"POST /api/v1/jobs/:/enable":             {Action: access.Operate, Reach: access.OneJob},
	"GET /api/v1/jobs/:/sharding":            {Action: access.Read, Reach: access.OneJob},
	"POST /api/v1/jobs/:/sharding/:/disable": {Action: access.Operate, Reach: access.OneJob},
	"POST /api/v1/jobs/:/sharding/:/enable":  {Action: access.Operate, Reach: access.OneJob},
	"POST /api/v1/jobs/:/servers/:/disable":  {Action: access.Operate, Reach: access.OneJob}, // one job's server
	"POST /api/v1/jobs/:/servers/:/enable":   {Action: access.Operate, Reach: access.OneJob},
	"GET /api/v1/jobs/:/executions":          {Action: access.Read, Reach: access.OneJob},
	"GET /api/v1/jobs/:/traces":              {Action: access.Read, Reach: access.OneJob},
	"GET /api/v1/jobs/:/dump":                {Action: access.Read, Reach: access.OneJob},
	"GET /api/v1/jobs/:/stats":               {Action: access.Read, Reach: access.OneJob},
	"GET /api/v1/jobs/:/points":              {Action: access.Read, Reach: access.OneJob},
	// backfills of a job's past fires (issue 24)
	"POST /api/v1/jobs/:/backfill":          {Action: access.Operate, Reach: access.OneJob},
	"GET /api/v1/jobs/:/backfill":           {Action: access.Read, Reach: access.OneJob},
	"GET /api/v1/jobs/:/backfill/:":         {Action: access.Read, Reach: access.OneJob},
	"POST /api/v1/jobs/:/backfill/:/cancel": {Action: access.Operate, Reach: access.OneJob},
	"GET /api/v1/executions":                {Action: access.Read, Reach: access.JobRows},
	"GET /api/v1/executions/:":              {Action: access.Read, Reach: access.JobRows},    // 404 for another job's
	"POST /api/v1/executions/:/replay":      {Action: access.Operate, Reach: access.JobRows}, // 404 for another job's

	// the cluster: what reaches every job
	"GET /api/v1/servers":            {Action: access.Read, Reach: access.Cluster},
	"POST /api/v1/servers/:/disable": {Action: access.Administer, Reach: access.Cluster},
	"POST /api/v1/servers/:/enable":  {Action: access.Administer, Reach: access.Cluster},
	"GET /api/v1/instances":          {Action: access.Read, Reach: access.Cluster},
	"GET /metrics":                   {Action: access.Read, Reach: access.Cluster}, // with --metrics-auth; else open
	"GET /api/v1/cron/next":          {Action: access.Read, Reach: access.Nothing},
	// the console's charts over every job: a scoped token's jobs only, filtered in the query (issue 25)
	"GET /api/v1/stats":         {Action: access.Read, Reach: access.JobRows},
	"GET /api/v1/schedule/load": {Action: access.Read, Reach: access.JobRows},
	"GET /api/v1/auth/whoami":   {Action: access.Read, Reach: access.Nothing},
	// echo's 404 for a group's unknown paths (so that they pass the group's middleware)
	echo.RouteNotFound + " /api/v1":                {Action: access.Read, Reach: access.Nothing},
	echo.RouteNotFound + " /api/v1/*":              {Action: access.Read, Reach: access.Nothing},
	echo.RouteNotFound + " /api/v1/executions/:":   {Action: access.Read, Reach: access.CallbackToken},
	echo.RouteNotFound + " /api/v1/executions/:/*": {Action: access.Read, Reach: access.CallbackToken},

	// alert channels and their notification history (issue 17)
	"GET /api/v1/channels":         {Action: access.Read, Reach: access.Cluster},
	"POST /api/v1/channels":        {Action: access.Administer, Reach: access.Cluster},
	"GET /api/v1/channels/:":       {Action: access.Read, Reach: access.Cluster},
	"PUT /api/v1/channels/:":       {Action: access.Administer, Reach: access.Cluster},
	"DELETE /api/v1/channels/:":    {Action: access.Administer, Reach: access.Cluster},
	"POST /api/v1/channels/:/test": {Action: access.Administer, Reach: access.Cluster},
	"GET /api/v1/notifications":    {Action: access.Read, Reach: access.JobRows}, // only the token's jobs' rows

	// workflows (issue 26): they reach jobs across scopes, so they are cluster-wide objects: scoped tokens
	// get 404; managers define them, operators run and control runs, viewers read
	"POST /api/v1/workflows":                 {Action: access.Manage, Reach: access.Cluster},
	"GET /api/v1/workflows":                  {Action: access.Read, Reach: access.Cluster},
	"GET /api/v1/workflows/:":                {Action: access.Read, Reach: access.Cluster},
	"PUT /api/v1/workflows/:":                {Action: access.Manage, Reach: access.Cluster},
	"DELETE /api/v1/workflows/:":             {Action: access.Manage, Reach: access.Cluster},
	"POST /api/v1/workflows/:/runs":          {Action: access.Operate, Reach: access.Cluster},
	"GET /api/v1/workflows/:/runs":           {Action: access.Read, Reach: access.Cluster},
	"GET /api/v1/workflows/:/runs/:":         {Action: access.Read, Reach: access.Cluster},
	"POST /api/v1/workflows/:/runs/:/cancel": {Action: access.Operate, Reach: access.Cluster},
	"POST /api/v1/workflows/:/runs/:/retry":  {Action: access.Operate, Reach: access.Cluster},

	// the audit trail (issue 23): read-only through the API; a scoped token sees only its jobs' entries
	"GET /api/v1/audit": {Action: access.Read, Reach: access.JobRows},

	// calendars (issue 24): cluster-wide objects like channels; pause/resume are operator actions like disable
	"GET /api/v1/calendars":      {Action: access.Read, Reach: access.Cluster},
	"POST /api/v1/calendars":     {Action: access.Administer, Reach: access.Cluster},
	"GET /api/v1/calendars/:":    {Action: access.Read, Reach: access.Cluster},
	"PUT /api/v1/calendars/:":    {Action: access.Administer, Reach: access.Cluster},
	"DELETE /api/v1/calendars/:": {Action: access.Administer, Reach: access.Cluster},
	"POST /api/v1/jobs/:/pause":  {Action: access.Operate, Reach: access.OneJob},
	"POST /api/v1/jobs/:/resume": {Action: access.Operate, Reach: access.OneJob},
	"GET /api/v1/jobs/:/next":    {Action: access.Read, Reach: access.OneJob},

	// the cluster's default alert rules (issue 17): cluster-wide
	"GET /api/v1/alerts/defaults": {Action: access.Read, Reach: access.Cluster},
	"PUT /api/v1/alerts/defaults": {Action: access.Administer, Reach: access.Cluster},
}

// pendingRoutes are the rules of routes other branches are adding: the only rules allowed to have no route.
var pendingRoutes = []string{}

var paramRE = regexp.MustCompile(`:[^/]+`)

// routeKey is a route's key in routeRules: its method and its path with each parameter written ":".
func routeKey(method, path string) string { return method + " " + paramRE.ReplaceAllString(path, ":") }

// ruleFor returns the rule of the route a request matched.
func ruleFor(method, path string) (access.Rule, bool) {
	for _, m := range []string{method, echo.RouteNotFound} {
		if r, ok := routeRules[routeKey(m, path)]; ok {
			return r, true
		}
	}
	return access.Rule{}, false
}

// authorize applies the matched route's rule to the caller authenticate found: 403 when the role may not
// (whatever the object), 404 when the object is outside the caller's scope. It runs after authenticate;
// the handlers of JobRows routes keep to the scope themselves.
func (h *handlers) authorize(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		t, _ := callerOf(c)
		rule, ok := ruleFor(c.Request().Method, c.Path())
		if !ok {
			return &authError{http.StatusForbidden, "this route has no access rule: it is refused to every token", realm + `, error="insufficient_scope"`}
		}
		switch access.Decide(t.grant(), rule) {
		case access.Forbid:
			return forbidden(t, rule.Action)
		case access.Hide:
			return echo.ErrNotFound // as for a path that does not exist
		}
		if rule.Reach == access.OneJob {
			if err := h.mustSee(c.Request().Context(), t.Scope, c.Param("jobName")); err != nil {
				return err
			}
		}
		return next(c)
	}
}

// sees reports whether a scope holds a job. A scope with labels reads the job's label (the registry cache,
// or ZooKeeper for a job the cache does not hold yet); a job that does not exist is in no label's scope.
func (h *handlers) sees(ctx context.Context, s access.Scope, job string) (bool, error) {
	if s.InScope(job, "") {
		return true, nil // unscoped, or a prefix
	}
	if s.ByNameOnly() {
		return false, nil
	}
	label, err := h.svc.JobLabel(ctx, job)
	if ejserver.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return s.InScope(job, label), nil
}

// mustSee is sees as the answer to a request: a job outside the scope is "not found", word for word as a
// job that does not exist.
func (h *handlers) mustSee(ctx context.Context, s access.Scope, job string) error {
	ok, err := h.sees(ctx, s, job)
	if err != nil {
		return err
	}
	if !ok {
		return ejserver.Errorf(ejserver.ENOTFOUND, "job %q not found", job)
	}
	return nil
}

// jobSet is the history filter of a scope: nil when unscoped.
func (h *handlers) jobSet(s access.Scope) *history.JobSet {
	if s.Unscoped() {
		return nil
	}
	return &history.JobSet{Prefixes: s.Prefixes, Names: h.svc.JobsLabeled(s.Labels)}
}
