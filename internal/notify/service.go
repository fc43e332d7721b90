package notify

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/ejserver/ejserver/internal/clock"
)

// Service is what the API manages channels with: the Store's reads and writes, and a test send.
type Service struct {
	*Store
	d         *Dispatcher
	namespace string
	clk       clock.Clock
}

// NewService returns the channels' management service over store and dispatcher.
func NewService(store *Store, d *Dispatcher, namespace string, clk clock.Clock) *Service {
	if clk == nil {
		clk = clock.Real{}
	}
	return &Service{Store: store, d: d, namespace: namespace, clk: clk}
}

// TestNotification is the notification POST /api/v1/channels/{name}/test sends.
func TestNotification(namespace, channel string, now time.Time) Notification {
	return Notification{ID: uuid.NewString(), Kind: KindTest, Severity: SeverityInfo, At: now.UTC(),
		Namespace: namespace, Rule: "test", DedupKey: "ejserver-test/" + namespace + "/" + channel,
		Title: "Test notification from ejserver (" + namespace + ")",
		Text:  "Channel " + channel + " works: this is what ejserver's alerts will look like here."}
}

// Test sends a TEST notification through channel name now, with one attempt, and reports how it went (the
// channel is read from ZooKeeper, so one just written is tested). A PagerDuty test opens an incident of
// severity info with its own dedup_key.
func (s *Service) Test(ctx context.Context, name string) (Notification, Result, error) {
	c, err := s.Get(ctx, name)
	if err != nil {
		return Notification{}, Result{}, err
	}
	n := TestNotification(s.namespace, name, s.clk.Now())
	return n, s.d.Test(ctx, c.Channel, n), nil
}
