package notify

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/ejserver/ejserver/internal/webhook"
)

// EventType is the type of the webhook channel's event.
const EventType = "ejserver.notification"

// Event is the JSON body the webhook channel POSTs, in the Standard Webhooks payload shape (type,
// timestamp, data).
type Event struct {
	Type string `json:"type"`
	// Timestamp is when the notification was decided (Notification.At).
	Timestamp time.Time `json:"timestamp"`
	// Channel names the channel it was sent through.
	Channel string       `json:"channel"`
	Data    Notification `json:"data"`
}

// renderWebhook makes the webhook channel's request: the Event JSON with the Standard Webhooks headers of
// item webhooks (webhook-id = the notification's id, stable across retries; webhook-timestamp = now;
// webhook-signature when the channel has a secret), signed by the same code.
func renderWebhook(c Channel, n Notification, now time.Time) (Request, error) {
	b, err := json.Marshal(Event{Type: EventType, Timestamp: n.At.UTC(), Channel: c.Name, Data: n})
	if err != nil {
		return Request{}, err
	}
	r := jsonRequest(c.Webhook.URL, b)
	ts := now.Unix()
	r.Header.Set(webhook.HeaderID, n.ID)
	r.Header.Set(webhook.HeaderTimestamp, strconv.FormatInt(ts, 10))
	if secret := str(c.Webhook.Secret); secret != "" {
		sig, err := webhook.SignatureHeader([]string{secret}, n.ID, ts, b)
		if err != nil {
			return Request{}, err
		}
		r.Header.Set(webhook.HeaderSignature, sig)
	}
	return r, nil
}
