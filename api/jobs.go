package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/service"
)

type handlers struct {
	svc     Service
	health  Health
	maxBody int64
}

// readBody reads the whole request body (bounded by the BodyLimit middleware).
func readBody(c echo.Context) ([]byte, error) {
	b, err := io.ReadAll(c.Request().Body)
	if err != nil {
		var he *echo.HTTPError
		if errors.As(err, &he) {
			return nil, he
		}
		return nil, echo.NewHTTPError(http.StatusRequestEntityTooLarge)
	}
	return b, nil
}

func decodeJob(c echo.Context) (ejserver.JobConfig, error) {
	if ct := c.Request().Header.Get(echo.HeaderContentType); ct != "" && !strings.HasPrefix(ct, echo.MIMEApplicationJSON) {
		return ejserver.JobConfig{}, echo.NewHTTPError(http.StatusUnsupportedMediaType, "send application/json")
	}
	b, err := readBody(c)
	if err != nil {
		return ejserver.JobConfig{}, err
	}
	return ejserver.DecodeJobConfig(bytes.NewReader(b))
}

// createJob godoc
//
//	@Summary		Create a job
//	@Description	Registers a job. Fields left out take ElasticJob's defaults. With "webhook": {"generateSecret": true} the response carries the generated secret once, in generatedSecret.
//	@Tags			jobs
//	@Accept			json
//	@Produce		json,application/problem+json
//	@Param			job	body		ejserver.JobConfig	true	"the job"
//	@Success		201	{object}	JobResponse
//	@Header			201	{string}	ETag		"the job's version"
//	@Header			201	{string}	Location	"the job's URL"
//	@Failure		400	{object}	Problem	"invalid field, unknown field or wrong type (field names it)"
//	@Failure		401	{object}	Problem	"no or unknown token"
//	@Failure		403	{object}	Problem	"a viewer or operator token, or a job outside the token's scope"
//	@Failure		409	{object}	Problem	"a job with this name exists"
//	@Failure		413	{object}	Problem	"the body is larger than the limit"
//	@Failure		415	{object}	Problem	"the body is not application/json"
//	@Failure		503	{object}	Problem	"ZooKeeper unavailable"
//	@Security		BearerAuth
//	@Router			/api/v1/jobs [post]
func (h *handlers) createJob(c echo.Context) error {
	cfg, err := decodeJob(c)
	if err != nil {
		return err
	}
	// a scoped token creates only jobs in its scope (an invalid name is the service's 400 to give)
	if t, _ := callerOf(c); ejserver.ValidateJobName(cfg.JobName) == nil && !t.Scope.InScope(cfg.JobName, cfg.Label) {
		return outOfScope(t, cfg.JobName, cfg.Label)
	}
	v, secret, err := h.svc.CreateJob(c.Request().Context(), cfg)
	if err != nil {
		return err
	}
	c.Response().Header().Set("ETag", etag(v.Version))
	c.Response().Header().Set("Location", "/api/v1/jobs/"+url.PathEscape(v.JobName))
	return c.JSON(http.StatusCreated, JobResponse{Job: jobOf(v), GeneratedSecret: secret})
}

// listJobs godoc
//
//	@Summary	List jobs
//	@Description	Jobs by name, with status, instance count, next fire time and (with a history store) the last hour's and day's success and failure counts.
//	@Tags		jobs
//	@Produce	json,application/problem+json
//	@Param		q		query		string	false	"substring of the name, description or label"
//	@Param		status	query		string	false	"OK, CRASHED, DISABLED or SHARDING_FLAG"
//	@Param		cursor	query		string	false	"nextCursor of the previous page"
//	@Param		limit	query		int		false	"page size, 1-1000 (default 100)"
//	@Success	200		{object}	JobList
//	@Failure	400		{object}	Problem	"a bad filter or limit"
//	@Failure	401		{object}	Problem	"no or unknown token"
//	@Security	BearerAuth
//	@Router		/api/v1/jobs [get]
func (h *handlers) listJobs(c echo.Context) error {
	limit, err := limitParam(c)
	if err != nil {
		return err
	}
	f := service.JobFilter{Query: c.QueryParam("q"), Status: c.QueryParam("status"), After: c.QueryParam("cursor"), Limit: limit}
	if s := grantOf(c).Scope; !s.Unscoped() {
		f.Visible = s.InScope
	}
	page, err := h.svc.ListJobs(c.Request().Context(), f)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, JobList{Items: jobsOf(page.Items), NextCursor: page.NextCursor, Total: page.Total})
}

// getJob godoc
//
//	@Summary	Get a job
//	@Description	The job's config (secrets never included: hasSecret says whether one is set) and state. The ETag header is its version, for If-Match on replace.
//	@Tags		jobs
//	@Produce	json,application/problem+json
//	@Param		jobName	path		string	true	"job name"
//	@Success	200		{object}	Job
//	@Header		200		{string}	ETag	"the job's version"
//	@Failure	401		{object}	Problem	"no or unknown token"
//	@Failure	404		{object}	Problem	"no such job"
//	@Security	BearerAuth
//	@Router		/api/v1/jobs/{jobName} [get]
func (h *handlers) getJob(c echo.Context) error {
	v, err := h.svc.GetJob(c.Request().Context(), c.Param("jobName"))
	if err != nil {
		return err
	}
	c.Response().Header().Set("ETag", etag(v.Version))
	return c.JSON(http.StatusOK, jobOf(v))
}

// replaceJob godoc
//
//	@Summary		Replace a job
//	@Description	Replaces the job's config. Send If-Match with the ETag you read so a concurrent change is not overwritten (412 if it was). If-Match follows RFC 9110: "*" matches any version of an existing job, a list of entity-tags matches if one of them is the current ETag, and weak tags (W/"3") never match. webhook.secret: absent keeps the stored secret, "" removes it, a new value rotates to it (the old one keeps signing for secretGracePeriodSeconds).
//	@Tags			jobs
//	@Accept			json
//	@Produce		json,application/problem+json
//	@Param			jobName		path		string				true	"job name"
//	@Param			If-Match	header		string				false	"the ETag of the version you edited, or *"
//	@Param			job			body		ejserver.JobConfig	true	"the job"
//	@Success		200			{object}	JobResponse
//	@Header			200			{string}	ETag	"the new version"
//	@Failure		400			{object}	Problem	"invalid field, unknown field, wrong type, a rename or an If-Match that is not entity-tag syntax"
//	@Failure		401			{object}	Problem	"no or unknown token"
//	@Failure		403			{object}	Problem	"a viewer or operator token, or a change that moves the job out of the token's scope"
//	@Failure		404			{object}	Problem	"no such job"
//	@Failure		412			{object}	Problem	"If-Match does not match: the job changed since the ETag you sent, or the tag is not one ejserver sent"
//	@Failure		413			{object}	Problem	"the body is larger than the limit"
//	@Failure		415			{object}	Problem	"the body is not application/json"
//	@Failure		503			{object}	Problem	"ZooKeeper unavailable"
//	@Security		BearerAuth
//	@Router			/api/v1/jobs/{jobName} [put]
func (h *handlers) replaceJob(c echo.Context) error {
	pre, err := parseIfMatch(c.Request().Header)
	if err != nil {
		return err
	}
	cfg, err := decodeJob(c)
	if err != nil {
		return err
	}
	var check service.VersionCheck
	if pre != nil {
		check = pre.matches
	}
	// a scoped token keeps the job in its scope: it was (authorize checked, the guard checks again on the
	// very version replaced) and it stays (the new config)
	var guard service.Guard
	if t, _ := callerOf(c); !t.Scope.Unscoped() {
		name := c.Param("jobName")
		if !t.Scope.InScope(name, cfg.Label) {
			return outOfScope(t, name, cfg.Label)
		}
		guard = func(cur ejserver.JobConfig) error {
			if !t.Scope.InScope(cur.JobName, cur.Label) {
				return ejserver.Errorf(ejserver.ENOTFOUND, "job %q not found", name)
			}
			return nil
		}
	}
	v, secret, err := h.svc.ReplaceJob(c.Request().Context(), c.Param("jobName"), cfg, check, guard)
	if why := pre.whyNoMatch(); why != "" && ejserver.ErrorCodeOf(err) == ejserver.EPRECONDITION {
		return ejserver.Errorf(ejserver.EPRECONDITION, "%s", why)
	}
	if err != nil {
		return err
	}
	c.Response().Header().Set("ETag", etag(v.Version))
	return c.JSON(http.StatusOK, JobResponse{Job: jobOf(v), GeneratedSecret: secret})
}

// deleteJob godoc
//
//	@Summary	Delete a job
//	@Description	Removes the job and its registry subtree; every peer stops firing it at once.
//	@Tags		jobs
//	@Produce	application/problem+json
//	@Param		jobName	path	string	true	"job name"
//	@Success	204
//	@Failure	401	{object}	Problem	"no or unknown token"
//	@Failure	403	{object}	Problem	"a viewer or operator token"
//	@Failure	404	{object}	Problem	"no such job"
//	@Security	BearerAuth
//	@Router		/api/v1/jobs/{jobName} [delete]
func (h *handlers) deleteJob(c echo.Context) error {
	if err := h.svc.DeleteJob(c.Request().Context(), c.Param("jobName")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// triggerJob godoc
//
//	@Summary		Trigger a job now
//	@Description	Every online instance runs its items once with source MANUAL, optionally with a jobParameter override and only some items. An item still running runs again right after its current run. The response says which instances and items the trigger reached.
//	@Tags			jobs
//	@Accept			json
//	@Produce		json,application/problem+json
//	@Param			jobName	path		string					true	"job name"
//	@Param			trigger	body		service.TriggerRequest	false	"override and subset"
//	@Success		202		{object}	service.TriggerResult
//	@Failure		400		{object}	Problem	"an item outside the job, given twice, or an unknown field"
//	@Failure		401		{object}	Problem	"no or unknown token"
//	@Failure		403		{object}	Problem	"a viewer token"
//	@Failure		404		{object}	Problem	"no such job"
//	@Failure		409		{object}	Problem	"disabled job, or no instance online"
//	@Failure		413		{object}	Problem	"the body is larger than the limit"
//	@Security		BearerAuth
//	@Router			/api/v1/jobs/{jobName}/trigger [post]
func (h *handlers) triggerJob(c echo.Context) error {
	var req service.TriggerRequest
	b, err := readBody(c)
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(b)) > 0 {
		if err := strictJSON(b, &req); err != nil {
			return err
		}
	}
	// a caller's W3C trace context: the fire's items become children of its trace (a malformed one is ignored
	// by the peers that run them)
	if tp := c.Request().Header.Get("traceparent"); len(tp) <= 128 {
		req.TraceParent = tp
		if ts := c.Request().Header.Get("tracestate"); len(ts) <= 512 {
			req.TraceState = ts
		}
	}
	res, err := h.svc.TriggerJob(c.Request().Context(), c.Param("jobName"), req)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusAccepted, res)
}

// disableJob godoc
//
//	@Summary	Disable a job
//	@Description	The job stops firing on every peer (its config's disabled field).
//	@Tags		jobs
//	@Produce	json,application/problem+json
//	@Param		jobName	path		string	true	"job name"
//	@Success	200		{object}	Job
//	@Header		200		{string}	ETag	"the job's new version"
//	@Failure	401		{object}	Problem	"no or unknown token"
//	@Failure	403		{object}	Problem	"a viewer token"
//	@Failure	404		{object}	Problem	"no such job"
//	@Security	BearerAuth
//	@Router		/api/v1/jobs/{jobName}/disable [post]
func (h *handlers) disableJob(c echo.Context) error { return h.setJobDisabled(c, true) }

// enableJob godoc
//
//	@Summary	Enable a job
//	@Description	The job fires again; this peer also re-registers on it if an operator had removed its instance node.
//	@Tags		jobs
//	@Produce	json,application/problem+json
//	@Param		jobName	path		string	true	"job name"
//	@Success	200		{object}	Job
//	@Header		200		{string}	ETag	"the job's new version"
//	@Failure	401		{object}	Problem	"no or unknown token"
//	@Failure	403		{object}	Problem	"a viewer token"
//	@Failure	404		{object}	Problem	"no such job"
//	@Security	BearerAuth
//	@Router		/api/v1/jobs/{jobName}/enable [post]
func (h *handlers) enableJob(c echo.Context) error { return h.setJobDisabled(c, false) }

func (h *handlers) setJobDisabled(c echo.Context, disabled bool) error {
	return answerJob(c)(h.svc.SetJobDisabled(c.Request().Context(), c.Param("jobName"), disabled))
}

// answerJob answers a change of a job's state: the job, with its new version as the ETag, or the error.
func answerJob(c echo.Context) func(service.JobView, error) error {
	return func(v service.JobView, err error) error {
		if err != nil {
			return err
		}
		c.Response().Header().Set("ETag", etag(v.Version))
		return c.JSON(http.StatusOK, jobOf(v))
	}
}

// sharding godoc
//
//	@Summary	A job's items
//	@Description	Per item: owner instance and server IP, status (DISABLED > RUNNING > SHARDING_FLAG > MISFIRE > COMPLETED > PENDING), failover taker, parameter, the running execution and the last outcome.
//	@Tags		sharding
//	@Produce	json,application/problem+json
//	@Param		jobName	path		string	true	"job name"
//	@Success	200		{object}	ItemList
//	@Failure	401		{object}	Problem	"no or unknown token"
//	@Failure	404		{object}	Problem	"no such job"
//	@Security	BearerAuth
//	@Router		/api/v1/jobs/{jobName}/sharding [get]
func (h *handlers) sharding(c echo.Context) error {
	items, err := h.svc.Sharding(c.Request().Context(), c.Param("jobName"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, ItemList{JobName: c.Param("jobName"), Items: items})
}

// disableItem godoc
//
//	@Summary	Disable an item
//	@Description	The item is not run until enabled (sharding/{item}/disabled).
//	@Tags		sharding
//	@Produce	application/problem+json
//	@Param		jobName	path	string	true	"job name"
//	@Param		item	path	int		true	"item number"
//	@Success	204
//	@Failure	400	{object}	Problem	"item is not a number"
//	@Failure	401	{object}	Problem	"no or unknown token"
//	@Failure	403	{object}	Problem	"a viewer token"
//	@Failure	404	{object}	Problem	"no such job, or no such item"
//	@Security	BearerAuth
//	@Router		/api/v1/jobs/{jobName}/sharding/{item}/disable [post]
func (h *handlers) disableItem(c echo.Context) error { return h.setItemDisabled(c, true) }

// enableItem godoc
//
//	@Summary	Enable an item
//	@Description	The item runs again from its next fire.
//	@Tags		sharding
//	@Produce	application/problem+json
//	@Param		jobName	path	string	true	"job name"
//	@Param		item	path	int		true	"item number"
//	@Success	204
//	@Failure	400	{object}	Problem	"item is not a number"
//	@Failure	401	{object}	Problem	"no or unknown token"
//	@Failure	403	{object}	Problem	"a viewer token"
//	@Failure	404	{object}	Problem	"no such job, or no such item"
//	@Security	BearerAuth
//	@Router		/api/v1/jobs/{jobName}/sharding/{item}/enable [post]
func (h *handlers) enableItem(c echo.Context) error { return h.setItemDisabled(c, false) }

func (h *handlers) setItemDisabled(c echo.Context, disabled bool) error {
	item, err := strconv.Atoi(c.Param("item"))
	if err != nil || item < 0 {
		return ejserver.Invalid("item", "%q is not an item number", c.Param("item"))
	}
	if err := h.svc.SetItemDisabled(c.Request().Context(), c.Param("jobName"), item, disabled); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// disableJobServer godoc
//
//	@Summary	Disable a server for one job
//	@Description	Instances on this IP stop running the job (servers/{ip} = DISABLED); its items move at the next resharding.
//	@Tags		servers
//	@Produce	application/problem+json
//	@Param		jobName	path	string	true	"job name"
//	@Param		ip		path	string	true	"server IP"
//	@Success	204
//	@Failure	400	{object}	Problem	"ip is not an IP address"
//	@Failure	401	{object}	Problem	"no or unknown token"
//	@Failure	403	{object}	Problem	"a viewer token"
//	@Failure	404	{object}	Problem	"no such job"
//	@Security	BearerAuth
//	@Router		/api/v1/jobs/{jobName}/servers/{ip}/disable [post]
func (h *handlers) disableJobServer(c echo.Context) error { return h.setJobServer(c, true) }

// enableJobServer godoc
//
//	@Summary	Enable a server for one job
//	@Description	Instances on this IP run the job again (servers/{ip} = ENABLED); items move to them at the next resharding.
//	@Tags		servers
//	@Produce	application/problem+json
//	@Param		jobName	path	string	true	"job name"
//	@Param		ip		path	string	true	"server IP"
//	@Success	204
//	@Failure	400	{object}	Problem	"ip is not an IP address"
//	@Failure	401	{object}	Problem	"no or unknown token"
//	@Failure	403	{object}	Problem	"a viewer token"
//	@Failure	404	{object}	Problem	"no such job"
//	@Security	BearerAuth
//	@Router		/api/v1/jobs/{jobName}/servers/{ip}/enable [post]
func (h *handlers) enableJobServer(c echo.Context) error { return h.setJobServer(c, false) }

func (h *handlers) setJobServer(c echo.Context, disabled bool) error {
	if err := h.svc.SetJobServerDisabled(c.Request().Context(), c.Param("jobName"), c.Param("ip"), disabled); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// dump godoc
//
//	@Summary	Dump a job's registry subtree
//	@Description	ElasticJob's dump: one "path | value" line per ZooKeeper node of the job (secrets masked).
//	@Tags		jobs
//	@Produce	plain,application/problem+json
//	@Param		jobName	path		string	true	"job name"
//	@Success	200		{string}	string
//	@Failure	401		{object}	Problem	"no or unknown token"
//	@Failure	404		{object}	Problem	"no such job"
//	@Security	BearerAuth
//	@Router		/api/v1/jobs/{jobName}/dump [get]
func (h *handlers) dump(c echo.Context) error {
	text, err := h.svc.Dump(c.Request().Context(), c.Param("jobName"))
	if err != nil {
		return err
	}
	return c.String(http.StatusOK, text)
}

// strictJSON decodes one JSON value, rejecting unknown fields, with field-level errors.
func strictJSON(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &te):
			return ejserver.Invalid(te.Field, "has the wrong type (%s)", te.Value)
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			return ejserver.Invalid(strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`), "unknown field")
		}
		return ejserver.Invalid("body", "malformed JSON: %v", err)
	}
	if dec.More() {
		return ejserver.Invalid("body", "unexpected data after the JSON object")
	}
	return nil
}

func intParam(c echo.Context, name string, def int) (int, error) {
	s := c.QueryParam(name)
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, ejserver.Invalid(name, "%q is not a whole number", s)
	}
	return n, nil
}

func formatBytes(n int64) string {
	switch {
	case n%(1<<20) == 0:
		return strconv.FormatInt(n>>20, 10) + "M"
	case n%(1<<10) == 0:
		return strconv.FormatInt(n>>10, 10) + "K"
	}
	return strconv.FormatInt(n, 10)
}
