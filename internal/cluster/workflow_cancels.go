package cluster

import (
	"encoding/json"
	"errors"
	"slices"
	"time"

	"github.com/go-zookeeper/zk"
)

// A cancelled workflow run stops its running nodes' items on every peer:
//
//	/{ns}.ejserver/workflow-cancels/c-{seq}   a node fire to stop (data: FireCancel), written with the run's
//	                                          CANCELLED step; every peer watches the folder and ends its
//	                                          items of the fire; the engine drops old ones

func (p Paths) workflowCancels() string { return p.Meta() + "/workflow-cancels" }

// FireCancel is one node fire a cancelled run stops.
type FireCancel struct {
	Job    string    `json:"job"`
	Fire   string    `json:"fire"`
	Reason string    `json:"reason,omitempty"`
	At     time.Time `json:"at"`
}

// cancelsMade is the firesMade key that says the cancels folder exists (no job is named with a slash).
const cancelsMade = "/workflow-cancels"

// cancelOps are the ops that post fire cancels (AdvanceRun's, with the run's step).
func (r *Registry) cancelOps(cancels []FireCancel) ([]any, error) {
	if len(cancels) == 0 {
		return nil, nil
	}
	if _, ok := r.firesMade.Load(cancelsMade); !ok {
		if err := r.s.ensurePath(r.p.workflowCancels()); err != nil {
			return nil, err
		}
		r.firesMade.Store(cancelsMade, struct{}{})
	}
	ops := make([]any, 0, len(cancels))
	for _, c := range cancels {
		data, err := json.Marshal(c)
		if err != nil {
			return nil, err
		}
		ops = append(ops, r.s.opCreate(r.p.workflowCancels()+"/c-", data, zk.FlagSequence))
	}
	return ops, nil
}

// WatchFireCancels reads the fire cancels by node name and arms a watch: the channel is closed when the
// list changes.
func (r *Registry) WatchFireCancels() (map[string]FireCancel, <-chan struct{}, error) {
	kids, ch, err := r.watchChildren(r.p.workflowCancels())
	if err != nil {
		return nil, nil, err
	}
	slices.Sort(kids)
	out := make(map[string]FireCancel, len(kids))
	for _, k := range kids {
		data, _, err := r.s.get(r.p.workflowCancels() + "/" + k)
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return nil, ch, err
		}
		var c FireCancel
		if json.Unmarshal(data, &c) == nil {
			out[k] = c
		}
	}
	return out, ch, nil
}

// FireCancelNames lists the fire cancels' node names, oldest first, without a watch.
func (r *Registry) FireCancelNames() ([]string, error) {
	kids, _, err := r.s.children(r.p.workflowCancels())
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	slices.Sort(kids)
	return kids, err
}

// ReadFireCancel reads one fire cancel (false: gone).
func (r *Registry) ReadFireCancel(name string) (FireCancel, bool, error) {
	data, _, err := r.s.get(r.p.workflowCancels() + "/" + name)
	if errors.Is(err, zk.ErrNoNode) {
		return FireCancel{}, false, nil
	}
	if err != nil {
		return FireCancel{}, false, err
	}
	var c FireCancel
	_ = json.Unmarshal(data, &c)
	return c, true, nil
}

// DropFireCancel deletes a fire cancel, fenced by the engine's node (gone already is fine).
func (r *Registry) DropFireCancel(fence any, name string) error {
	_, err := r.s.multi(fence, opDelete(r.p.workflowCancels()+"/"+name, -1))
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	return err
}
