package api

import (
	"bytes"
	"context"
	"net/http"
	"net/url"

	"github.com/labstack/echo/v4"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/workflow"
	"github.com/ejserver/ejserver/internal/workflow/engine"
)

// Workflows is what the workflow routes need (engine.Service satisfies it).
type Workflows interface {
	List(ctx context.Context) ([]workflow.Workflow, error)
	Get(ctx context.Context, name string) (engine.Stored, error)
	Create(ctx context.Context, w workflow.Workflow) (engine.Stored, error)
	Replace(ctx context.Context, name string, w workflow.Workflow, version int32) (engine.Stored, error)
	Delete(ctx context.Context, name string) error
	Trigger(ctx context.Context, name string, req engine.TriggerRequest) (workflow.Run, error)
	ListRuns(ctx context.Context, name string) ([]workflow.Run, error)
	GetRun(ctx context.Context, name, id string) (workflow.Run, error)
	Cancel(ctx context.Context, name, id string) (workflow.Run, error)
	Retry(ctx context.Context, name, id string) (workflow.Run, error)
}

// WorkflowList is every workflow, by name.
type WorkflowList struct {
	Items []workflow.Workflow `json:"items"`
}

// WorkflowRunList is the runs ZooKeeper holds of a workflow (the active ones and the last 20 ended), newest
// first.
type WorkflowRunList struct {
	Items []workflow.Run `json:"items"`
}

type workflowHandlers struct{ w Workflows }

func workflowRoutes(g *echo.Group, w Workflows) {
	if w == nil {
		return
	}
	h := workflowHandlers{w: w}
	g.POST("/workflows", h.create)
	g.GET("/workflows", h.list)
	g.GET("/workflows/:name", h.get)
	g.PUT("/workflows/:name", h.replace)
	g.DELETE("/workflows/:name", h.delete)
	g.POST("/workflows/:name/runs", h.trigger)
	g.GET("/workflows/:name/runs", h.runs)
	g.GET("/workflows/:name/runs/:run", h.run)
	g.POST("/workflows/:name/runs/:run/cancel", h.cancel)
	g.POST("/workflows/:name/runs/:run/retry", h.retry)
}

func decodeWorkflow(c echo.Context) (workflow.Workflow, error) {
	var w workflow.Workflow
	b, err := readBody(c)
	if err != nil {
		return w, err
	}
	return w, strictJSON(b, &w)
}

// create godoc
//
//	@Summary		Create a workflow
//	@Description	A DAG of nodes, each firing an existing job once per run after its parents ended as its edges require (after: [{node, on: success|failure|always}], on defaults to success). Optional cron and timeZone schedule runs (empty: only triggered); overlap (skip, allow, replace) says what a scheduled run does while an earlier one is still going; excludeCalendars/includeCalendars steer scheduled runs as a job's do (an unknown calendar is a field error); alerts holds alert rules in a job's model on WORKFLOW_FAILED, RUNNING_LONG and RECOVERED. Validation refuses cycles, unknown jobs, unreachable nodes and bad names, each a field error naming the node (nodes[i].after[j].node). Workflows are cluster-wide: scoped tokens get 404.
//	@Tags			workflows
//	@Accept			json
//	@Produce		json,application/problem+json
//	@Param			workflow	body		workflow.Workflow	true	"the workflow"
//	@Success		201			{object}	workflow.Workflow
//	@Header			201			{string}	ETag		"the workflow's version"
//	@Header			201			{string}	Location	"the workflow's URL"
//	@Failure		400			{object}	Problem	"invalid field (a cycle, an unknown job, an unreachable node...), unknown field or wrong type"
//	@Failure		401			{object}	Problem	"no or unknown token"
//	@Failure		403			{object}	Problem	"a viewer or operator token"
//	@Failure		404			{object}	Problem	"a scoped token: workflows are cluster-wide"
//	@Failure		409			{object}	Problem	"a workflow with this name exists"
//	@Failure		503			{object}	Problem	"ZooKeeper unavailable"
//	@Security		BearerAuth
//	@Router			/api/v1/workflows [post]
func (h workflowHandlers) create(c echo.Context) error {
	w, err := decodeWorkflow(c)
	if err != nil {
		return err
	}
	st, err := h.w.Create(c.Request().Context(), w)
	if err != nil {
		return err
	}
	c.Response().Header().Set("ETag", etag(st.Version))
	c.Response().Header().Set("Location", "/api/v1/workflows/"+url.PathEscape(st.Name))
	return c.JSON(http.StatusCreated, st.Workflow)
}

// list godoc
//
//	@Summary	List workflows
//	@Tags		workflows
//	@Produce	json,application/problem+json
//	@Success	200	{object}	WorkflowList
//	@Failure	401	{object}	Problem	"no or unknown token"
//	@Failure	404	{object}	Problem	"a scoped token: workflows are cluster-wide"
//	@Failure	503	{object}	Problem	"ZooKeeper unavailable"
//	@Security	BearerAuth
//	@Router		/api/v1/workflows [get]
func (h workflowHandlers) list(c echo.Context) error {
	all, err := h.w.List(c.Request().Context())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, WorkflowList{Items: all})
}

// get godoc
//
//	@Summary	Get a workflow
//	@Tags		workflows
//	@Produce	json,application/problem+json
//	@Param		name	path		string	true	"workflow name"
//	@Success	200		{object}	workflow.Workflow
//	@Header		200		{string}	ETag	"the workflow's version"
//	@Failure	401		{object}	Problem	"no or unknown token"
//	@Failure	404		{object}	Problem	"no such workflow, or a scoped token"
//	@Security	BearerAuth
//	@Router		/api/v1/workflows/{name} [get]
func (h workflowHandlers) get(c echo.Context) error {
	st, err := h.w.Get(c.Request().Context(), c.Param("name"))
	if err != nil {
		return err
	}
	c.Response().Header().Set("ETag", etag(st.Version))
	return c.JSON(http.StatusOK, st.Workflow)
}

// replace godoc
//
//	@Summary		Replace a workflow
//	@Description	Replaces the definition; runs going on keep the nodes they were made with. Send If-Match with the ETag you read (412 if it changed since); "*" matches any version.
//	@Tags			workflows
//	@Accept			json
//	@Produce		json,application/problem+json
//	@Param			name		path		string				true	"workflow name"
//	@Param			If-Match	header		string				false	"the ETag of the version you edited, or *"
//	@Param			workflow	body		workflow.Workflow	true	"the workflow"
//	@Success		200			{object}	workflow.Workflow
//	@Header			200			{string}	ETag	"the new version"
//	@Failure		400			{object}	Problem	"invalid field, a rename or a bad If-Match"
//	@Failure		401			{object}	Problem	"no or unknown token"
//	@Failure		403			{object}	Problem	"a viewer or operator token"
//	@Failure		404			{object}	Problem	"no such workflow, or a scoped token"
//	@Failure		412			{object}	Problem	"If-Match does not match"
//	@Failure		503			{object}	Problem	"ZooKeeper unavailable"
//	@Security		BearerAuth
//	@Router			/api/v1/workflows/{name} [put]
func (h workflowHandlers) replace(c echo.Context) error {
	pre, err := parseIfMatch(c.Request().Header)
	if err != nil {
		return err
	}
	w, err := decodeWorkflow(c)
	if err != nil {
		return err
	}
	version := int32(-1)
	if pre != nil {
		cur, err := h.w.Get(c.Request().Context(), c.Param("name"))
		if err != nil {
			return err
		}
		if !pre.matches(cur.Version) {
			why := pre.whyNoMatch()
			if why == "" {
				why = "workflow " + c.Param("name") + " changed since the version you read"
			}
			return ejserver.Errorf(ejserver.EPRECONDITION, "%s", why)
		}
		version = cur.Version
	}
	st, err := h.w.Replace(c.Request().Context(), c.Param("name"), w, version)
	if err != nil {
		return err
	}
	c.Response().Header().Set("ETag", etag(st.Version))
	return c.JSON(http.StatusOK, st.Workflow)
}

// delete godoc
//
//	@Summary		Delete a workflow
//	@Description	Deletes the workflow and the runs ZooKeeper holds of it; fires of nodes going on finish.
//	@Tags			workflows
//	@Produce		json,application/problem+json
//	@Param			name	path	string	true	"workflow name"
//	@Success		204
//	@Failure		401	{object}	Problem	"no or unknown token"
//	@Failure		403	{object}	Problem	"a viewer or operator token"
//	@Failure		404	{object}	Problem	"no such workflow, or a scoped token"
//	@Failure		503	{object}	Problem	"ZooKeeper unavailable"
//	@Security		BearerAuth
//	@Router			/api/v1/workflows/{name} [delete]
func (h workflowHandlers) delete(c echo.Context) error {
	if err := h.w.Delete(c.Request().Context(), c.Param("name")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// trigger godoc
//
//	@Summary		Trigger a workflow run
//	@Description	Makes a run (PENDING) and asks the engine to start it: its root nodes fire at once. parameters (a JSON object, up to 4 KB) reach every node's items as workflow.parameters. A triggered run always starts (the overlap policy is for scheduled runs).
//	@Tags			workflows
//	@Accept			json
//	@Produce		json,application/problem+json
//	@Param			name	path		string					true	"workflow name"
//	@Param			request	body		engine.TriggerRequest	false	"parameters for the whole run"
//	@Success		202		{object}	workflow.Run
//	@Header			202		{string}	Location	"the run's URL"
//	@Failure		400		{object}	Problem	"parameters not a JSON object, or too long"
//	@Failure		401		{object}	Problem	"no or unknown token"
//	@Failure		403		{object}	Problem	"a viewer token"
//	@Failure		404		{object}	Problem	"no such workflow, or a scoped token"
//	@Failure		409		{object}	Problem	"the workflow is disabled"
//	@Failure		503		{object}	Problem	"ZooKeeper unavailable"
//	@Security		BearerAuth
//	@Router			/api/v1/workflows/{name}/runs [post]
func (h workflowHandlers) trigger(c echo.Context) error {
	var req engine.TriggerRequest
	b, err := readBody(c)
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(b)) > 0 {
		if err := strictJSON(b, &req); err != nil {
			return err
		}
	}
	r, err := h.w.Trigger(c.Request().Context(), c.Param("name"), req)
	if err != nil {
		return err
	}
	c.Response().Header().Set("Location", "/api/v1/workflows/"+url.PathEscape(r.Workflow)+"/runs/"+r.ID)
	return c.JSON(http.StatusAccepted, r)
}

// runs godoc
//
//	@Summary	List a workflow's runs
//	@Description	The runs ZooKeeper holds (the active ones and the last 20 ended ones), newest first, each with its nodes' states.
//	@Tags		workflows
//	@Produce	json,application/problem+json
//	@Param		name	path		string	true	"workflow name"
//	@Success	200		{object}	WorkflowRunList
//	@Failure	401		{object}	Problem	"no or unknown token"
//	@Failure	404		{object}	Problem	"no such workflow, or a scoped token"
//	@Failure	503		{object}	Problem	"ZooKeeper unavailable"
//	@Security	BearerAuth
//	@Router		/api/v1/workflows/{name}/runs [get]
func (h workflowHandlers) runs(c echo.Context) error {
	all, err := h.w.ListRuns(c.Request().Context(), c.Param("name"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, WorkflowRunList{Items: all})
}

// run godoc
//
//	@Summary	Get a workflow run
//	@Description	The run's state and every node's: state, the fire key, when it fired and ended, its items, error and output.
//	@Tags		workflows
//	@Produce	json,application/problem+json
//	@Param		name	path		string	true	"workflow name"
//	@Param		run		path		string	true	"run id"
//	@Success	200		{object}	workflow.Run
//	@Failure	401		{object}	Problem	"no or unknown token"
//	@Failure	404		{object}	Problem	"no such run, or a scoped token"
//	@Security	BearerAuth
//	@Router		/api/v1/workflows/{name}/runs/{run} [get]
func (h workflowHandlers) run(c echo.Context) error {
	r, err := h.w.GetRun(c.Request().Context(), c.Param("name"), c.Param("run"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, r)
}

// cancel godoc
//
//	@Summary		Cancel a workflow run
//	@Description	Asks the engine to cancel the run: no node fires any more, and the running nodes' items stop on every peer as CANCEL_PREVIOUS stops an item (requests in flight aborted, accepted items' leases cancelled, recorded CANCELLED). Answers with the run as it is now (the cancel lands in a moment).
//	@Tags			workflows
//	@Produce		json,application/problem+json
//	@Param			name	path		string	true	"workflow name"
//	@Param			run		path		string	true	"run id"
//	@Success		202		{object}	workflow.Run
//	@Failure		401		{object}	Problem	"no or unknown token"
//	@Failure		403		{object}	Problem	"a viewer token"
//	@Failure		404		{object}	Problem	"no such run, or a scoped token"
//	@Failure		409		{object}	Problem	"the run already ended"
//	@Security		BearerAuth
//	@Router			/api/v1/workflows/{name}/runs/{run}/cancel [post]
func (h workflowHandlers) cancel(c echo.Context) error {
	r, err := h.w.Cancel(c.Request().Context(), c.Param("name"), c.Param("run"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusAccepted, r)
}

// retry godoc
//
//	@Summary		Retry a workflow run from its failed nodes
//	@Description	Asks the engine to run a FAILED or CANCELLED run again: the nodes that did not succeed, and every node below them, go back to PENDING (attempt + 1); succeeded nodes elsewhere are not repeated.
//	@Tags			workflows
//	@Produce		json,application/problem+json
//	@Param			name	path		string	true	"workflow name"
//	@Param			run		path		string	true	"run id"
//	@Success		202		{object}	workflow.Run
//	@Failure		401		{object}	Problem	"no or unknown token"
//	@Failure		403		{object}	Problem	"a viewer token"
//	@Failure		404		{object}	Problem	"no such run, or a scoped token"
//	@Failure		409		{object}	Problem	"the run is not FAILED or CANCELLED"
//	@Security		BearerAuth
//	@Router			/api/v1/workflows/{name}/runs/{run}/retry [post]
func (h workflowHandlers) retry(c echo.Context) error {
	r, err := h.w.Retry(c.Request().Context(), c.Param("name"), c.Param("run"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusAccepted, r)
}
