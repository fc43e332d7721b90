package main

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/testutil"
	"github.com/ejserver/ejserver/internal/webhook"
)

// TestStreamsTheBacklogWithTheRealSender runs ejserver's sender against this receiver: 25 records in batches
// of 10 take three POSTs per item per fire.
func TestStreamsTheBacklogWithTheRealSender(t *testing.T) {
	var out testutil.SyncBuffer
	secret := webhook.GenerateSecret()
	srv := httptest.NewServer(newHandler(&out, secret, 25, 10))
	defer srv.Close()
	s := webhook.New(webhook.Config{})
	defer s.Close()

	deliver := func(executionID string) webhook.Result {
		return s.Deliver(context.Background(), webhook.Delivery{
			Payload: webhook.Payload{JobName: "sync", ExecutionID: executionID, ShardingItem: 1, ShardingTotalCount: 2,
				Source: string(ejserver.SourceNormal), ScheduledAt: time.Now()},
			Webhook:   ejserver.Webhook{URL: srv.URL, Secret: secret, TimeoutMs: 5000, ConnectTimeoutMs: 1000},
			Retry:     ejserver.RetryPolicy{MaxAttempts: 1},
			Streaming: true,
		})
	}
	for _, id := range []string{"fire-1", "fire-2"} { // each fire finds a fresh backlog
		res := deliver(id)
		if !res.Success || res.Iterations != 3 || res.HasMore {
			t.Fatalf("%s: result = %+v\n%s", id, res, out.String())
		}
	}
	text := out.String()
	for _, want := range []string{
		"iteration 1: records 1-10", "iteration 2: records 11-20", "iteration 3: records 21-25",
		"id fire-1.3", "0 left → hasMore=false",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
}
