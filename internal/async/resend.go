package async

import (
	"context"
	"errors"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/lease"
	"github.com/ejserver/ejserver/internal/webhook"
)

// resend POSTs an item again in the background, as the lease's Iteration and Attempt (a retry after its
// lease ran out, or a DATAFLOW item's next iteration), and applies the outcome. The lease is RETRYING
// meanwhile; if this peer dies, the lease runs out again and the watcher retries.
func (m *Manager) resend(l lease.Lease) {
	m.mu.Lock()
	if m.stopped {
		m.mu.Unlock()
		return // the lease stays RETRYING: the next watcher looks at it when it is due
	}
	m.wg.Add(1)
	m.mu.Unlock()
	go func() {
		defer m.wg.Done()
		select {
		case m.resendSlots <- struct{}{}:
		case <-m.stop:
			return
		}
		defer func() { <-m.resendSlots }()
		m.send(l)
	}()
}

func (m *Manager) send(l lease.Lease) {
	snap := m.reg.Job(l.JobName)
	if snap == nil || snap.ConfigErr != nil {
		return // the watcher cancels it
	}
	cfg := snap.Config
	param, _ := ejserver.ParseShardingItemParameters(cfg.ShardingItemParameters, cfg.ShardingTotalCount)
	d := webhook.Delivery{
		Payload: webhook.Payload{
			JobName: l.JobName, TaskID: l.TaskID, ExecutionID: l.ExecutionID, ShardingItem: l.ShardingItem,
			ShardingParameter: param[l.ShardingItem], ShardingTotalCount: l.ShardingTotalCount, JobParameter: l.JobParameter,
			Source: l.Source, ScheduledAt: l.ScheduledAt, InstanceID: m.me.InstanceID, LeaseSeconds: cfg.Async.LeaseSeconds,
		},
		Webhook: cfg.Webhook, Retry: cfg.Retry, MaxConcurrentPerJob: cfg.MaxConcurrentRequests,
		Streaming: cfg.JobType == ejserver.JobTypeDataflow && cfg.StreamingProcess, Deadline: l.Deadline,
		Callback: m.Callback(l.ExecutionID), FirstAttempt: l.Attempt, FirstIteration: max(l.Iteration, 1),
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-m.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	m.log.Info("POSTing an accepted item again", "job", l.JobName, "item", l.ShardingItem, "execution_id", l.ExecutionID,
		"attempt", l.Attempt, "iteration", l.Iteration, "cause", l.Cause)
	res := m.cfg.Sender.Send(ctx, m.cfg.Sender.Prepare(d))
	select {
	case <-m.stop:
		// this peer is stopping, not the item failing: it stays RETRYING, and when its window has passed the
		// watcher (on whichever peer holds the duty then) POSTs it again
		m.log.Info("re-POST of an accepted item cut short by the shutdown; the lease decides", "job", l.JobName,
			"item", l.ShardingItem, "execution_id", l.ExecutionID)
		return
	default:
	}
	ev := lease.Event{Kind: lease.Sent, At: m.clk.Now(), Iteration: res.Iteration, Attempt: res.Attempt,
		Accepted: res.Accepted, Success: res.Success && !res.Accepted, StatusCode: res.StatusCode,
		Cause: res.FailureCause}
	if res.Attempts == 0 { // nothing was sent: the attempt it was to be fails
		ev.Iteration, ev.Attempt = l.Iteration, l.Attempt
		if ev.Cause == "" {
			ev.Cause = "not sent"
		}
	}
	if _, err := m.apply(l.ExecutionID, func() lease.Event { return ev }, nil); err != nil && !errors.Is(err, context.Canceled) {
		m.log.Warn("could not record a re-POST's outcome; the lease decides", "job", l.JobName, "item", l.ShardingItem,
			"execution_id", l.ExecutionID, "err", err)
	}
}
