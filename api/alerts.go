package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/ejserver/ejserver"
)

// AlertDefaults keeps the cluster's default alert rules (alert.Service satisfies it).
type AlertDefaults interface {
	Defaults() ejserver.Alerts
	SetDefaults(a ejserver.Alerts) error
}

func alertRoutes(g *echo.Group, a AlertDefaults) {
	h := alertHandlers{a: a}
	g.GET("/alerts/defaults", h.getDefaults)
	g.PUT("/alerts/defaults", h.putDefaults)
}

type alertHandlers struct{ a AlertDefaults }

// getDefaults godoc
//
//	@Summary		Default alert rules
//	@Description	The cluster's default alert rules and thresholds: they apply to every job that has no alert rules of its own.
//	@Tags			alerts
//	@Produce		json,application/problem+json
//	@Success		200	{object}	ejserver.Alerts
//	@Failure		401	{object}	Problem
//	@Failure		404	{object}	Problem	"a scoped token: the default rules are cluster-wide, not its"
//	@Security		BearerAuth
//	@Router			/api/v1/alerts/defaults [get]
func (h alertHandlers) getDefaults(c echo.Context) error {
	return c.JSON(http.StatusOK, h.a.Defaults())
}

// putDefaults godoc
//
//	@Summary		Replace the default alert rules
//	@Description	Replaces the cluster's default alert rules and thresholds (stored in ZooKeeper; every peer applies them within 10 seconds). An empty object removes them.
//	@Tags			alerts
//	@Accept			json
//	@Produce		json,application/problem+json
//	@Param			rules	body		ejserver.Alerts	true	"the default rules"
//	@Success		200		{object}	ejserver.Alerts
//	@Failure		400		{object}	Problem	"a field is invalid (fields lists each)"
//	@Failure		401		{object}	Problem
//	@Failure		403		{object}	Problem	"an operator or viewer token"
//	@Failure		404		{object}	Problem	"a scoped token: the default rules are cluster-wide, not its"
//	@Security		BearerAuth
//	@Router			/api/v1/alerts/defaults [put]
func (h alertHandlers) putDefaults(c echo.Context) error {
	b, err := readBody(c)
	if err != nil {
		return err
	}
	var a ejserver.Alerts
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		var own *ejserver.Error
		if errors.As(err, &own) {
			return own
		}
		if errors.Is(err, io.EOF) {
			return ejserver.Invalid("body", "a JSON object is required")
		}
		return ejserver.Invalid("body", "%v", err)
	}
	if err := h.a.SetDefaults(a); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, h.a.Defaults())
}
