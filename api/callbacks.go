package api

import (
	"bytes"
	"context"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"go.opentelemetry.io/otel/trace"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/async"
	"github.com/ejserver/ejserver/internal/tracing"
)

// Callbacks applies the callbacks of accepted items (async.Manager satisfies it).
type Callbacks interface {
	Heartbeat(ctx context.Context, executionID, token string, req async.HeartbeatRequest) (async.View, error)
	Complete(ctx context.Context, executionID, token string, req async.CompleteRequest) (async.View, error)
}

// maxCallbackBody bounds a callback's body: a completion's output excerpt and message, and JSON around them.
const maxCallbackBody = 64 << 10

// callbackRoutes serves the callbacks of accepted items. They are not behind the API tokens: each is
// authorised by its execution's callback token alone, which opens nothing else.
func callbackRoutes(e *echo.Echo, cb Callbacks) {
	h := callbackHandlers{cb: cb}
	g := e.Group("/api/v1/executions/:id", middleware.BodyLimit(formatBytes(maxCallbackBody)))
	g.POST("/heartbeat", h.heartbeat)
	g.POST("/complete", h.complete)
}

type callbackHandlers struct{ cb Callbacks }

// callbackToken reads the token from Authorization: Bearer, or the Ejserver-Callback-Token header.
func callbackToken(c echo.Context) string {
	if tok, ok := strings.CutPrefix(c.Request().Header.Get(echo.HeaderAuthorization), "Bearer "); ok {
		return strings.TrimSpace(tok)
	}
	return strings.TrimSpace(c.Request().Header.Get("Ejserver-Callback-Token"))
}

// callerTrace is the request's context with the receiver's span context when the request carried a W3C
// traceparent: the callback's span is its child, or links to it (async.Manager decides).
func callerTrace(c echo.Context) context.Context {
	ctx, h := c.Request().Context(), c.Request().Header
	if sc := tracing.Parse(h.Get(tracing.HeaderTraceParent), h.Get(tracing.HeaderTraceState)); sc.IsValid() {
		ctx = trace.ContextWithRemoteSpanContext(ctx, sc)
	}
	return ctx
}

func decodeCallback(c echo.Context, v any) error {
	if ct := c.Request().Header.Get(echo.HeaderContentType); ct != "" && !strings.HasPrefix(ct, echo.MIMEApplicationJSON) {
		return echo.NewHTTPError(http.StatusUnsupportedMediaType, "send application/json")
	}
	b, err := readBody(c)
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return nil
	}
	return strictJSON(b, v)
}

// heartbeat godoc
//
//	@Summary		Heartbeat of an accepted item
//	@Description	A receiver that answered an item's request with 202 Accepted renews the item's lease (async.leaseSeconds from now, never past async.maxDurationSeconds from its start) and reports progress. Authorised by the execution's callback token (the body's callbackToken), not by an API token. Any peer takes it. The answer's state tells the receiver whether to go on (RUNNING) or stop.
//	@Tags			callbacks
//	@Accept			json
//	@Produce		json,application/problem+json
//	@Param			id				path		string					true	"execution id (the webhook-id)"
//	@Param			Authorization	header		string					true	"Bearer {callbackToken}"
//	@Param			heartbeat		body		async.HeartbeatRequest	false	"progress and message"
//	@Success		200				{object}	async.View
//	@Failure		400				{object}	Problem	"a bad field (field names it)"
//	@Failure		401				{object}	Problem	"type callback-token: no token, or not this execution's"
//	@Failure		404				{object}	Problem	"no such execution is known"
//	@Failure		409				{object}	Problem	"type lease-expired, already-completed, stale-attempt or execution-cancelled"
//	@Router			/api/v1/executions/{id}/heartbeat [post]
func (h callbackHandlers) heartbeat(c echo.Context) error {
	var req async.HeartbeatRequest
	if err := decodeCallback(c, &req); err != nil {
		return err
	}
	v, err := h.cb.Heartbeat(callerTrace(c), c.Param("id"), callbackToken(c), req)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, v)
}

// complete godoc
//
//	@Summary		Completion of an accepted item
//	@Description	A receiver that answered an item's request with 202 Accepted reports its end: status success or failure, a message, an output excerpt, and for a streaming DATAFLOW job hasMore (POST the item again with the next iteration). The same completion repeated answers 200 whenever it comes; a different one after the end is 409. Authorised by the execution's callback token, not by an API token. Any peer takes it.
//	@Tags			callbacks
//	@Accept			json
//	@Produce		json,application/problem+json
//	@Param			id				path		string					true	"execution id (the webhook-id)"
//	@Param			Authorization	header		string					true	"Bearer {callbackToken}"
//	@Param			completion		body		async.CompleteRequest	true	"the outcome"
//	@Success		200				{object}	async.View
//	@Failure		400				{object}	Problem	"a bad field (field names it)"
//	@Failure		401				{object}	Problem	"type callback-token: no token, or not this execution's"
//	@Failure		404				{object}	Problem	"no such execution is known"
//	@Failure		409				{object}	Problem	"type lease-expired, already-completed, stale-attempt or execution-cancelled"
//	@Router			/api/v1/executions/{id}/complete [post]
func (h callbackHandlers) complete(c echo.Context) error {
	var req async.CompleteRequest
	if err := decodeCallback(c, &req); err != nil {
		return err
	}
	if req.Status == "" {
		return ejserver.Invalid("status", `is required: "success" or "failure"`)
	}
	v, err := h.cb.Complete(callerTrace(c), c.Param("id"), callbackToken(c), req)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, v)
}
