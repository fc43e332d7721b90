package api

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/ejserver/ejserver"
)

// Problem is an RFC 9457 problem details object, with the offending field(s) of a validation error.
type Problem struct {
	Type     string `json:"type" example:"https://ejserver.dev/problems/invalid"`
	Title    string `json:"title" example:"Invalid request"`
	Status   int    `json:"status" example:"400"`
	Detail   string `json:"detail" example:"shardingTotalCount: must be between 1 and 10000, got 0"`
	Instance string `json:"instance,omitempty" example:"/api/v1/jobs"`
	// Field is the first offending field (a JSON path such as webhook.url), for validation errors.
	Field string `json:"field,omitempty" example:"shardingTotalCount"`
	// Errors lists every offending field.
	Errors []ejserver.FieldError `json:"errors,omitempty"`
}

// problemType is the base of the problem type URIs (documented in the README; they need not resolve).
const problemType = "https://ejserver.dev/problems/"

// statusOf maps each domain error code to its HTTP status: the one place that does.
func statusOf(code ejserver.ErrorCode) (int, string) {
	switch code {
	case ejserver.EINVALID:
		return http.StatusBadRequest, "Invalid request"
	case ejserver.ENOTFOUND:
		return http.StatusNotFound, "Not found"
	case ejserver.ECONFLICT:
		return http.StatusConflict, "Conflict"
	case ejserver.EPRECONDITION:
		return http.StatusPreconditionFailed, "Precondition failed"
	case ejserver.EUNAVAILABLE:
		return http.StatusServiceUnavailable, "Service unavailable"
	case ejserver.EUNAUTHORIZED:
		return http.StatusUnauthorized, "Unauthorized"
	}
	return http.StatusInternalServerError, "Internal error"
}

// errorHandler renders every error as problem+json. Internal errors are logged with their cause and
// returned without it.
func errorHandler(log *slog.Logger) echo.HTTPErrorHandler {
	return func(err error, c echo.Context) {
		if c.Response().Committed {
			return
		}
		p := problemFor(err)
		p.Instance = c.Request().URL.Path
		var ae *authError
		if errors.As(err, &ae) {
			c.Response().Header().Set(echo.HeaderWWWAuthenticate, ae.challenge)
		}
		if p.Status >= 500 {
			log.Error("request failed", "method", c.Request().Method, "path", c.Request().URL.Path, "status", p.Status, "err", err)
		}
		c.Response().Header().Set(echo.HeaderContentType, "application/problem+json")
		if c.Request().Method == http.MethodHead {
			_ = c.NoContent(p.Status)
			return
		}
		_ = c.JSON(p.Status, p)
	}
}

func problemFor(err error) Problem {
	var ae *authError
	if errors.As(err, &ae) {
		typ := "unauthorized"
		if ae.status == http.StatusForbidden {
			typ = "forbidden"
		}
		return Problem{Type: problemType + typ, Title: http.StatusText(ae.status), Status: ae.status, Detail: ae.detail}
	}
	var he *echo.HTTPError
	if errors.As(err, &he) {
		title := http.StatusText(he.Code)
		detail := fmt.Sprint(he.Message)
		typ := "http-" + fmt.Sprint(he.Code)
		switch he.Code {
		case http.StatusRequestEntityTooLarge:
			detail, typ = "the request body is larger than the limit", "too-large"
		case http.StatusUnsupportedMediaType:
			typ = "unsupported-media-type"
		case http.StatusNotFound:
			detail, typ = "no such API path: see /openapi/openapi3.json", "no-route"
		case http.StatusMethodNotAllowed:
			typ = "method-not-allowed"
		}
		return Problem{Type: problemType + typ, Title: title, Status: he.Code, Detail: detail}
	}
	var de *ejserver.Error
	if errors.As(err, &de) {
		status, title := statusOf(de.Code)
		typ := string(de.Code)
		if de.Kind != "" {
			typ = de.Kind
		}
		p := Problem{Type: problemType + typ, Title: title, Status: status, Detail: de.Message,
			Field: de.Field(), Errors: de.Fields}
		if de.Code == ejserver.EINTERNAL {
			p.Detail = "an internal error occurred; it has been logged"
		}
		return p
	}
	status, title := statusOf(ejserver.EINTERNAL)
	return Problem{Type: problemType + string(ejserver.EINTERNAL), Title: title, Status: status,
		Detail: "an internal error occurred; it has been logged"}
}
