// Package receiver helps a Go service receive ejserver's webhooks: verify the Standard Webhooks signature,
// decode the shard context, drop duplicate deliveries, answer a DATAFLOW job's {"hasMore": ...}, and run
// long items asynchronously, reporting their progress and end through ejserver's callbacks.
//
// The smallest receiver:
//
//	h := receiver.Handler(receiver.Options{Secret: os.Getenv("WEBHOOK_SECRET")},
//		func(ctx context.Context, d receiver.Delivery) (receiver.Response, error) {
//			log.Printf("item %d of %d: %s", d.Payload.ShardingItem, d.Payload.ShardingTotalCount, d.Payload.ShardingParameter)
//			return receiver.Response{}, nil
//		})
//	http.ListenAndServe("127.0.0.1:9090", h)
//
// ejserver sends one request per item per fire with the same webhook-id for every retry of that item, so a
// receiver that dedupes on webhook-id processes each item once. A streaming DATAFLOW job's n-th re-POST of an
// item (n > 1) has the webhook-id "{executionId}.{n}" and "iteration": n in the body.
//
// # Long-running items
//
// Work that outlasts a request (minutes, hours) answers 202 Accepted and reports back later
// (docs/long-running.md). AsyncHandler does all of it: it answers 202 at once, runs the function in a
// goroutine, sends a heartbeat every leaseSeconds/3 while it runs (with the progress given to
// Reporter.Progress or Reporter.Heartbeat), and completes the item with success or failure when it returns:
//
//	h := receiver.AsyncHandler(receiver.Options{Secret: os.Getenv("WEBHOOK_SECRET")},
//		func(ctx context.Context, d receiver.Delivery, r *receiver.Reporter) error {
//			for i, batch := range batches {
//				if err := settle(ctx, batch); err != nil {
//					return err // completes the item with failure
//				}
//				r.Progress(100*(i+1)/len(batches), fmt.Sprintf("%d of %d batches", i+1, len(batches)))
//			}
//			return nil // completes the item with success
//		})
//	srv := &http.Server{Addr: "127.0.0.1:9090", Handler: h}
//	// ... on SIGTERM: srv.Shutdown(ctx), then h.Shutdown(ctx) to wait for the items still running.
//
// A completion is retried on network errors and 5xx; ctx is cancelled when ejserver answers that the item is
// over (cancelled, expired, completed elsewhere) or refuses the token. A receiver that runs its work its own
// way reports through a Callback (NewCallback, CallbackFromHeader) instead.
//
// The package uses only the standard library.
package receiver

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// DefaultTolerance is how far a webhook-timestamp may be from the receiver's clock (as in the Standard
// Webhooks libraries): older messages may be replays, newer ones come from a broken clock.
const DefaultTolerance = 5 * time.Minute

// Errors of Verify.
var (
	ErrMissingHeaders = errors.New("missing webhook-id, webhook-timestamp or webhook-signature header")
	ErrBadTimestamp   = errors.New("webhook-timestamp is not a Unix time in seconds")
	ErrTooOld         = errors.New("webhook-timestamp is too old")
	ErrTooNew         = errors.New("webhook-timestamp is too far in the future")
	ErrBadSecret      = errors.New(`secret is not "whsec_" followed by standard base64`)
	ErrNoMatch        = errors.New("no webhook-signature matches")
)

// Verify checks a request's Standard Webhooks signature with secret ("whsec_..." as ejserver showed it, or
// its base64 part alone) against the raw body, and that webhook-timestamp is within DefaultTolerance of now.
// Any one matching v1 signature is enough: during a secret rotation ejserver sends two.
func Verify(secret string, h http.Header, body []byte) error {
	return VerifyAt(secret, h, body, time.Now(), DefaultTolerance)
}

// VerifyAt is Verify with the receiver's time and tolerance given (tolerance <= 0 skips the time check).
func VerifyAt(secret string, h http.Header, body []byte, now time.Time, tolerance time.Duration) error {
	id, ts, sigs := h.Get("webhook-id"), h.Get("webhook-timestamp"), h.Get("webhook-signature")
	if id == "" || ts == "" || sigs == "" {
		return ErrMissingHeaders
	}
	unix, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return ErrBadTimestamp
	}
	if tolerance > 0 {
		sent := time.Unix(unix, 0)
		if now.Sub(sent) > tolerance {
			return ErrTooOld
		}
		if sent.Sub(now) > tolerance {
			return ErrTooNew
		}
	}
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil || len(key) == 0 {
		return ErrBadSecret
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + ts + "."))
	mac.Write(body)
	want := mac.Sum(nil)
	for sig := range strings.FieldsSeq(sigs) {
		b64, ok := strings.CutPrefix(sig, "v1,")
		if !ok {
			continue // another scheme (v1a, ...) or garbage: not ours to judge
		}
		got, err := base64.StdEncoding.DecodeString(b64)
		if err == nil && hmac.Equal(got, want) {
			return nil
		}
	}
	return ErrNoMatch
}

// Payload is the JSON body ejserver POSTs (DESIGN.md, "The webhook contract").
type Payload struct {
	JobName            string `json:"jobName"`
	TaskID             string `json:"taskId"`
	ExecutionID        string `json:"executionId"`
	ShardingItem       int    `json:"shardingItem"`
	ShardingParameter  string `json:"shardingParameter"`
	ShardingTotalCount int    `json:"shardingTotalCount"`
	JobParameter       string `json:"jobParameter"`
	// Source is NORMAL_TRIGGER, MISFIRE, FAILOVER or MANUAL.
	Source      string    `json:"source"`
	ScheduledAt time.Time `json:"scheduledAt"`
	// Attempt counts from 1; a retry of the same item has the same webhook-id and a higher Attempt.
	Attempt int `json:"attempt"`
	// Iteration is set for streaming DATAFLOW jobs only: 1, 2, ... for the n-th POST of the item in this fire.
	Iteration  int    `json:"iteration,omitempty"`
	InstanceID string `json:"instanceId"`
	// CallbackURL is the base of this execution's callbacks ({advertise-url}/api/v1/executions/{executionId}):
	// a receiver that answered 202 Accepted POSTs {CallbackURL}/heartbeat and {CallbackURL}/complete.
	CallbackURL string `json:"callbackUrl,omitempty"`
	// CallbackToken authorises this attempt's callbacks (Authorization: Bearer ...) and nothing else.
	CallbackToken string `json:"callbackToken,omitempty"`
	// LeaseSeconds is how long an accepted item lives without a heartbeat.
	LeaseSeconds int `json:"leaseSeconds,omitempty"`
	// JitterMs and DueAt are set for a scheduled fire of a job with jitterMs: the fire's deterministic offset
	// (0, and so absent, for some fires), and the time its requests were due to leave (ScheduledAt +
	// JitterMs, present whatever the offset), which lateness is measured from.
	JitterMs int       `json:"jitterMs,omitempty"`
	DueAt    time.Time `json:"dueAt,omitzero"`
	// Workflow is set when a workflow node fired the job (source WORKFLOW, or FAILOVER of such an item): the
	// workflow's name, the run's id and parameters, the node, and its parents' ends and outputs.
	Workflow json.RawMessage `json:"workflow,omitempty"`
}

// Response is what a handler answers. For a streaming DATAFLOW job, HasMore asks ejserver to POST the item
// again (with the next iteration) right away; other jobs may leave it false.
type Response struct {
	HasMore bool `json:"hasMore"`
}
