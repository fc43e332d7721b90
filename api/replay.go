package api

import (
	"context"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/ejserver/ejserver"
)

// Replays is what the replay route needs (replay.Replayer satisfies it).
type Replays interface {
	Original(ctx context.Context, id string) (ejserver.Execution, error)
	Replay(orig ejserver.Execution, by string) (ejserver.Execution, error)
}

// replay godoc
//
//	@Summary		Replay a failed execution
//	@Description	Re-runs one failed item execution from the peer that takes the request: a new execution with its own webhook-id, source MANUAL and the original's scheduledAt, whose replayOf names the original in the history. The request leaves in the background; the answer is the new execution as started (GET /api/v1/executions/{id} shows its end). To replay many, list them with success=false and a from time (the console's "Failed" view) and replay each.
//	@Tags			executions
//	@Produce		json,application/problem+json
//	@Param			id	path		string	true	"execution id"
//	@Success		202	{object}	ejserver.Execution
//	@Failure		401	{object}	Problem	"no or unknown token"
//	@Failure		403	{object}	Problem	"a viewer token"
//	@Failure		404	{object}	Problem	"no such execution (or another job's, for a scoped token)"
//	@Failure		409	{object}	Problem	"the execution is running or succeeded"
//	@Failure		503	{object}	Problem	"no history store"
//	@Security		BearerAuth
//	@Router			/api/v1/executions/{id}/replay [post]
func (h *handlers) replay(rp Replays) echo.HandlerFunc {
	return func(c echo.Context) error {
		ctx := c.Request().Context()
		orig, err := rp.Original(ctx, c.Param("id"))
		if err != nil {
			return err
		}
		// another job's execution is "not found", word for word as one that does not exist
		if ok, err := h.sees(ctx, grantOf(c).Scope, orig.JobName); err != nil {
			return err
		} else if !ok {
			return ejserver.Errorf(ejserver.ENOTFOUND, "execution %q not found", c.Param("id"))
		}
		out, err := rp.Replay(orig, callerName(c))
		if err != nil {
			return err
		}
		return c.JSON(http.StatusAccepted, out)
	}
}
