package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/ejserver/ejserver/internal/backfill"
)

// Backfills is what the backfill routes need (backfill.Service satisfies it).
type Backfills interface {
	Start(job string, req backfill.Request, by string) (backfill.Backfill, error)
	List(job string) ([]backfill.Backfill, error)
	Get(job, id string) (backfill.Backfill, error)
	Cancel(job, id, by string) (backfill.Backfill, error)
}

// BackfillList is a job's backfills, newest first.
type BackfillList struct {
	Items []backfill.Backfill `json:"items"`
}

type backfillHandlers struct{ bf Backfills }

func backfillRoutes(g *echo.Group, bf Backfills) {
	if bf == nil {
		return
	}
	h := &backfillHandlers{bf: bf}
	g.POST("/jobs/:jobName/backfill", h.start)
	g.GET("/jobs/:jobName/backfill", h.list)
	g.GET("/jobs/:jobName/backfill/:id", h.get)
	g.POST("/jobs/:jobName/backfill/:id/cancel", h.cancel)
}

// callerName names the caller in a backfill's record: its token's name, or "" on an open API.
func callerName(c echo.Context) string {
	t, _ := callerOf(c)
	return t.Name
}

// start godoc
//
//	@Summary		Backfill a job's past fires
//	@Description	Runs every fire the job's schedule (its cron in its time zone) had from `from` to `to` (both RFC 3339, both included, `to` not in the future), at most 10,000 fires. Each item of each fire is POSTed with source BACKFILL, scheduledAt the original time and a webhook-id of its own that stays the same if a peer stops mid-fire and another continues the backfill. Fires run one after the other, each fire's items a few at a time, paced so the job's own schedule and other jobs go first. overlapPolicy says what an item does while the job's own run of it is in flight: BUFFER_ONE (default) waits for it, SKIP leaves the item out, ALLOW runs beside it; CANCEL_PREVIOUS is refused (a backfill never cancels the schedule's runs).
//	@Tags			backfill
//	@Accept			json
//	@Produce		json,application/problem+json
//	@Param			jobName	path		string				true	"job name"
//	@Param			backfill	body		backfill.Request	true	"range and overlap policy"
//	@Success		202		{object}	backfill.Backfill
//	@Failure		400		{object}	Problem	"a bad from, to or overlapPolicy, or a range of more than 10,000 fires (field to)"
//	@Failure		401		{object}	Problem	"no or unknown token"
//	@Failure		403		{object}	Problem	"a viewer token"
//	@Failure		404		{object}	Problem	"no such job"
//	@Failure		409		{object}	Problem	"a job without a cron"
//	@Security		BearerAuth
//	@Router			/api/v1/jobs/{jobName}/backfill [post]
func (h *backfillHandlers) start(c echo.Context) error {
	var req backfill.Request
	b, err := readBody(c)
	if err != nil {
		return err
	}
	if err := strictJSON(b, &req); err != nil {
		return err
	}
	out, err := h.bf.Start(c.Param("jobName"), req, callerName(c))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusAccepted, out)
}

// list godoc
//
//	@Summary		List a job's backfills
//	@Description	The job's backfills, newest first, with their progress (done of total fires, the fire in flight, items sent, failed and skipped) and state: RUNNING, DONE, CANCELLED or FAILED.
//	@Tags			backfill
//	@Produce		json,application/problem+json
//	@Param			jobName	path		string	true	"job name"
//	@Success		200		{object}	BackfillList
//	@Failure		401		{object}	Problem	"no or unknown token"
//	@Failure		404		{object}	Problem	"no such job"
//	@Security		BearerAuth
//	@Router			/api/v1/jobs/{jobName}/backfill [get]
func (h *backfillHandlers) list(c echo.Context) error {
	items, err := h.bf.List(c.Param("jobName"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, BackfillList{Items: items})
}

// get godoc
//
//	@Summary		Get a backfill
//	@Description	One backfill's progress and state.
//	@Tags			backfill
//	@Produce		json,application/problem+json
//	@Param			jobName	path		string	true	"job name"
//	@Param			backfillId	path		string	true	"backfill id"
//	@Success		200		{object}	backfill.Backfill
//	@Failure		401		{object}	Problem	"no or unknown token"
//	@Failure		404		{object}	Problem	"no such job or backfill"
//	@Security		BearerAuth
//	@Router			/api/v1/jobs/{jobName}/backfill/{backfillId} [get]
func (h *backfillHandlers) get(c echo.Context) error {
	b, err := h.bf.Get(c.Param("jobName"), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, b)
}

// cancel godoc
//
//	@Summary		Cancel a backfill
//	@Description	Ends a running backfill: no fire starts after this, and the requests of the fire in flight are aborted (recorded as failed). Fires already done stay done.
//	@Tags			backfill
//	@Produce		json,application/problem+json
//	@Param			jobName	path		string	true	"job name"
//	@Param			backfillId	path		string	true	"backfill id"
//	@Success		200		{object}	backfill.Backfill
//	@Failure		401		{object}	Problem	"no or unknown token"
//	@Failure		403		{object}	Problem	"a viewer token"
//	@Failure		404		{object}	Problem	"no such job or backfill"
//	@Failure		409		{object}	Problem	"the backfill has ended"
//	@Security		BearerAuth
//	@Router			/api/v1/jobs/{jobName}/backfill/{backfillId}/cancel [post]
func (h *backfillHandlers) cancel(c echo.Context) error {
	b, err := h.bf.Cancel(c.Param("jobName"), c.Param("id"), callerName(c))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, b)
}
