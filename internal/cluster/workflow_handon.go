package cluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/go-zookeeper/zk"
)

// A workflow node's fire is one trigger node per instance that could own its items (AdvanceRun). A trigger
// whose instance vanished before taking it is picked up by nobody: the workflow engine hands its items on
// (HandOnTrigger), which needs the waiting triggers and the items the fire's ledger says started.

// WaitingTrigger is a trigger node still waiting for its instance.
type WaitingTrigger struct {
	Instance string
	Request  TriggerRequest
	Version  int32
}

// WaitingTriggers lists a job's trigger nodes with their requests (a node gone meanwhile is left out).
func (r *Registry) WaitingTriggers(job string) ([]WaitingTrigger, error) {
	kids, _, err := r.s.children(r.p.Triggers(job))
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	slices.Sort(kids)
	out := make([]WaitingTrigger, 0, len(kids))
	for _, k := range kids {
		data, st, err := r.s.get(r.p.Trigger(job, k))
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, WaitingTrigger{Instance: k, Request: decodeTrigger(data), Version: st.Version})
	}
	return out, nil
}

// FireStartedItems returns the items the start records of a fire's ledger name (their data's "items", as
// the alert service writes them); exists is false when the fire has no ledger.
func (r *Registry) FireStartedItems(job, fire string) (items []int, exists bool, err error) {
	kids, _, err := r.s.children(r.p.fire(job, fire))
	if errors.Is(err, zk.ErrNoNode) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	for _, k := range kids {
		if !strings.HasPrefix(k, "s-") {
			continue
		}
		data, _, err := r.s.get(r.p.fire(job, fire) + "/" + k)
		if errors.Is(err, zk.ErrNoNode) {
			return nil, false, nil // closed meanwhile
		}
		if err != nil {
			return nil, false, err
		}
		var rec struct {
			Items []int `json:"items"`
		}
		if json.Unmarshal(data, &rec) == nil {
			items = append(items, rec.Items...)
		}
	}
	slices.Sort(items)
	return slices.Compact(items), true, nil
}

// HandOnTrigger replaces a trigger waiting for a vanished instance with triggers for the instances in to, in
// one transaction fenced by the workflow engine's node and checked against the trigger's version: either
// the items move to their new owners once, or nothing changes. ErrTriggerPending: one of them still has a
// trigger waiting (try again later); ErrRunChanged: the trigger, the job or the fence went.
func (r *Registry) HandOnTrigger(fence any, job string, from WaitingTrigger, to map[string]TriggerRequest) error {
	ops := []any{fence, opDelete(r.p.Trigger(job, from.Instance), from.Version)}
	ids := make([]string, 0, len(to))
	for id := range to {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		data, err := json.Marshal(to[id])
		if err != nil {
			return err
		}
		ops = append(ops, r.s.opCreate(r.p.Trigger(job, id), data, 0))
	}
	_, err := r.b.submit(ops...)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, zk.ErrNodeExists):
		return ErrTriggerPending
	case errors.Is(err, zk.ErrBadVersion), errors.Is(err, zk.ErrNoNode):
		return ErrRunChanged
	}
	return fmt.Errorf("hand on the trigger of job %q for instance %s: %w", job, from.Instance, err)
}
