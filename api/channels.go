package api

import (
	"context"
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/ejserver/ejserver/internal/history"
	"github.com/ejserver/ejserver/internal/notify"
)

// Channels is what the channel routes need (notify.Service satisfies it).
type Channels interface {
	List(ctx context.Context) ([]notify.StoredChannel, error)
	Get(ctx context.Context, name string) (notify.StoredChannel, error)
	Create(ctx context.Context, c notify.Channel) (notify.StoredChannel, error)
	Replace(ctx context.Context, name string, c notify.Channel, check notify.VersionCheck) (notify.StoredChannel, error)
	Delete(ctx context.Context, name string) error
	Test(ctx context.Context, name string) (notify.Notification, notify.Result, error)
}

// Notifications is the notification history (history.Store satisfies it).
type Notifications interface {
	ListNotifications(ctx context.Context, f history.NotificationFilter) (history.NotificationPage, error)
}

// ChannelList is every channel, by name (secrets never included).
type ChannelList struct {
	Items []notify.Channel `json:"items"`
}

// ChannelTestResult is the outcome of a test send.
type ChannelTestResult struct {
	Channel        string `json:"channel"`
	NotificationID string `json:"notificationId"`
	notify.Result
}

// NotificationList is a page of notification records, newest first.
type NotificationList struct {
	Items []notify.Record `json:"items"`
	// NextCursor fetches the next (older) page; absent on the last page.
	NextCursor string `json:"nextCursor,omitempty"`
}

type channelHandlers struct {
	ch  Channels
	his Notifications
}

func channelRoutes(g *echo.Group, ch Channels, his Notifications) {
	h := &channelHandlers{ch: ch, his: his}
	if ch != nil {
		g.POST("/channels", h.create)
		g.GET("/channels", h.list)
		g.GET("/channels/:name", h.get)
		g.PUT("/channels/:name", h.replace)
		g.DELETE("/channels/:name", h.delete)
		g.POST("/channels/:name/test", h.test)
	}
	if his != nil {
		g.GET("/notifications", h.notifications)
	}
}

func decodeChannel(c echo.Context) (notify.Channel, error) {
	if ct := c.Request().Header.Get(echo.HeaderContentType); ct != "" && !strings.HasPrefix(ct, echo.MIMEApplicationJSON) {
		return notify.Channel{}, echo.NewHTTPError(http.StatusUnsupportedMediaType, "send application/json")
	}
	b, err := readBody(c)
	if err != nil {
		return notify.Channel{}, err
	}
	return notify.DecodeChannel(b)
}

// create godoc
//
//	@Summary		Create a notification channel
//	@Description	Registers a cluster-wide channel alert rules can name: kind webhook, slack, dingtalk, wecom, pagerduty or email, with the settings object of that kind. Secrets (URLs that hold tokens, signing secrets, the routing key, the SMTP password) are write-only: responses say hasXxx.
//	@Tags			channels
//	@Accept			json
//	@Produce		json,application/problem+json
//	@Param			channel	body		notify.Channel	true	"the channel"
//	@Success		201		{object}	notify.Channel
//	@Header			201		{string}	ETag		"the channel's version"
//	@Header			201		{string}	Location	"the channel's URL"
//	@Failure		400		{object}	Problem	"invalid field, unknown field or wrong type (field names it)"
//	@Failure		401		{object}	Problem	"no or unknown token"
//	@Failure		403		{object}	Problem	"a viewer token"
//	@Failure		409		{object}	Problem	"a channel with this name exists"
//	@Failure		503		{object}	Problem	"ZooKeeper unavailable"
//	@Security		BearerAuth
//	@Router			/api/v1/channels [post]
func (h *channelHandlers) create(c echo.Context) error {
	ch, err := decodeChannel(c)
	if err != nil {
		return err
	}
	st, err := h.ch.Create(c.Request().Context(), ch)
	if err != nil {
		return err
	}
	c.Response().Header().Set("ETag", etag(st.Version))
	c.Response().Header().Set("Location", "/api/v1/channels/"+url.PathEscape(st.Name))
	return c.JSON(http.StatusCreated, st.Redacted())
}

// list godoc
//
//	@Summary	List notification channels
//	@Description	Every channel, by name; secrets never included.
//	@Tags		channels
//	@Produce	json,application/problem+json
//	@Success	200	{object}	ChannelList
//	@Failure	401	{object}	Problem	"no or unknown token"
//	@Failure	503	{object}	Problem	"ZooKeeper unavailable"
//	@Security	BearerAuth
//	@Router		/api/v1/channels [get]
func (h *channelHandlers) list(c echo.Context) error {
	all, err := h.ch.List(c.Request().Context())
	if err != nil {
		return err
	}
	out := ChannelList{Items: make([]notify.Channel, len(all))}
	for i, st := range all {
		out.Items[i] = st.Redacted()
	}
	return c.JSON(http.StatusOK, out)
}

// get godoc
//
//	@Summary	Get a notification channel
//	@Description	The channel's settings (secrets never included: hasXxx says whether one is set). The ETag header is its version, for If-Match on replace.
//	@Tags		channels
//	@Produce	json,application/problem+json
//	@Param		name	path		string	true	"channel name"
//	@Success	200		{object}	notify.Channel
//	@Header		200		{string}	ETag	"the channel's version"
//	@Failure	401		{object}	Problem	"no or unknown token"
//	@Failure	404		{object}	Problem	"no such channel"
//	@Security	BearerAuth
//	@Router		/api/v1/channels/{name} [get]
func (h *channelHandlers) get(c echo.Context) error {
	st, err := h.ch.Get(c.Request().Context(), c.Param("name"))
	if err != nil {
		return err
	}
	c.Response().Header().Set("ETag", etag(st.Version))
	return c.JSON(http.StatusOK, st.Redacted())
}

// replace godoc
//
//	@Summary		Replace a notification channel
//	@Description	Replaces the channel's settings. A secret left out keeps its stored value, "" removes it. Send If-Match with the ETag you read so a concurrent change is not overwritten (412 if it was); "*" matches any version.
//	@Tags			channels
//	@Accept			json
//	@Produce		json,application/problem+json
//	@Param			name		path		string			true	"channel name"
//	@Param			If-Match	header		string			false	"the ETag of the version you edited, or *"
//	@Param			channel		body		notify.Channel	true	"the channel"
//	@Success		200			{object}	notify.Channel
//	@Header			200			{string}	ETag	"the new version"
//	@Failure		400			{object}	Problem	"invalid field, unknown field, wrong type, a rename or a bad If-Match"
//	@Failure		401			{object}	Problem	"no or unknown token"
//	@Failure		403			{object}	Problem	"a viewer token"
//	@Failure		404			{object}	Problem	"no such channel"
//	@Failure		412			{object}	Problem	"If-Match does not match: the channel changed since"
//	@Failure		503			{object}	Problem	"ZooKeeper unavailable"
//	@Security		BearerAuth
//	@Router			/api/v1/channels/{name} [put]
func (h *channelHandlers) replace(c echo.Context) error {
	pre, err := parseIfMatch(c.Request().Header)
	if err != nil {
		return err
	}
	ch, err := decodeChannel(c)
	if err != nil {
		return err
	}
	var check notify.VersionCheck
	if pre != nil {
		check = pre.matches
	}
	st, err := h.ch.Replace(c.Request().Context(), c.Param("name"), ch, check)
	if err != nil {
		return err
	}
	c.Response().Header().Set("ETag", etag(st.Version))
	return c.JSON(http.StatusOK, st.Redacted())
}

// delete godoc
//
//	@Summary	Delete a notification channel
//	@Description	Removes the channel; rules that name it count their notifications as outcome unknown until they are changed.
//	@Tags		channels
//	@Produce	application/problem+json
//	@Param		name	path	string	true	"channel name"
//	@Success	204
//	@Failure	401	{object}	Problem	"no or unknown token"
//	@Failure	403	{object}	Problem	"a viewer token"
//	@Failure	404	{object}	Problem	"no such channel"
//	@Security	BearerAuth
//	@Router		/api/v1/channels/{name} [delete]
func (h *channelHandlers) delete(c echo.Context) error {
	if err := h.ch.Delete(c.Request().Context(), c.Param("name")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// test godoc
//
//	@Summary		Send a test notification
//	@Description	Sends a TEST notification through the channel now (one attempt, within the channel's timeoutMs) and reports the outcome: sent, or failed with the service's HTTP status or the SMTP/transport error. It is recorded in the notification history like any other.
//	@Tags			channels
//	@Produce		json,application/problem+json
//	@Param			name	path		string	true	"channel name"
//	@Success		200		{object}	ChannelTestResult
//	@Failure		401		{object}	Problem	"no or unknown token"
//	@Failure		403		{object}	Problem	"a viewer token"
//	@Failure		404		{object}	Problem	"no such channel"
//	@Security		BearerAuth
//	@Router			/api/v1/channels/{name}/test [post]
func (h *channelHandlers) test(c echo.Context) error {
	n, res, err := h.ch.Test(c.Request().Context(), c.Param("name"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, ChannelTestResult{Channel: c.Param("name"), NotificationID: n.ID, Result: res})
}

// notifications godoc
//
//	@Summary	List sent notifications
//	@Description	What was sent where, and how it went: one record per notification per channel, newest first, filtered and paged with a cursor.
//	@Tags		channels
//	@Produce	json,application/problem+json
//	@Param		channel	query		string	false	"channel name"
//	@Param		job		query		string	false	"job name"
//	@Param		outcome	query		string	false	"sent, failed, dropped or unknown"
//	@Param		cursor	query		string	false	"nextCursor of the previous page"
//	@Param		limit	query		int		false	"page size, 1-500 (default 50)"
//	@Success	200		{object}	NotificationList
//	@Failure	400		{object}	Problem	"a bad filter, cursor or limit"
//	@Failure	401		{object}	Problem	"no or unknown token"
//	@Failure	503		{object}	Problem	"no history store"
//	@Security	BearerAuth
//	@Router		/api/v1/notifications [get]
func (h *channelHandlers) notifications(c echo.Context) error {
	limit, err := intParam(c, "limit", 0)
	if err != nil {
		return err
	}
	page, err := h.his.ListNotifications(c.Request().Context(), history.NotificationFilter{Channel: c.QueryParam("channel"),
		JobName: c.QueryParam("job"), Outcome: c.QueryParam("outcome"), Cursor: c.QueryParam("cursor"), Limit: limit})
	if err != nil {
		return err
	}
	if page.Items == nil {
		page.Items = []notify.Record{}
	}
	return c.JSON(http.StatusOK, NotificationList{Items: page.Items, NextCursor: page.NextCursor})
}
