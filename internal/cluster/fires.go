package cluster

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/go-zookeeper/zk"
)

// The fire ledger: /{namespace}.ejserver/fires/{job}/{fire} records which items of one fire started and
// ended on which peer, so that the peer whose record completes the fire (and only that one, through a
// fence node) sends the fire's afterFire hook and notifications. ElasticJob's guarantee/started and
// guarantee/completed nodes are per job and cannot tell two fires apart (an async item still running when
// the next fire starts); the ledger is per fire. The guarantee nodes are still written as ElasticJob writes
// them (one child per item, the folder deleted by the peer that sees them all), for ElasticJob's tools.
//
// A fire's children, each created once and never written again:
//
//	s-{n}-{expected}-{seq}  a peer started n items of a fire it expects `expected` items of (data: the caller's)
//	e-{n}-{seq}             n items ended (data: the caller's: outcomes)
//	{fence}                 created by exactly one peer: "began" (beforeFire), "closed" (afterFire), "partial"...

// Fire ledger paths.
func (p Paths) fires() string                  { return p.Meta() + "/fires" }
func (p Paths) firesOf(job string) string      { return p.fires() + "/" + job }
func (p Paths) fire(job, fire string) string   { return p.firesOf(job) + "/" + fire }
func (p Paths) guarantee(job, w string) string { return p.Job(job) + "/guarantee/" + w }
func (p Paths) alertFences(job string) string  { return p.Meta() + "/alerts/fences/" + job }
func (p Paths) alertState(job string) string   { return p.Meta() + "/alerts/state/" + job }

// AlertDefaults is the meta node of the cluster's default alert rules (JSON).
func (p Paths) AlertDefaults() string { return p.Meta() + "/alerts/defaults" }

// The guarantee folders (ElasticJob's names).
const (
	GuaranteeStarted   = "started"
	GuaranteeCompleted = "completed"
)

// ErrStateChanged: the alert state node was written since it was read: read it again and decide again.
var ErrStateChanged = errors.New("the alert state changed meanwhile")

// FireTally is what a fire's children say without reading their data.
type FireTally struct {
	Started, Ended, Expected int
	Fences                   []string
	Exists                   bool
}

// Has reports whether a fence node exists.
func (t FireTally) Has(fence string) bool { return slices.Contains(t.Fences, fence) }

// RecordFireStart records that this peer started items of a fire (created with the fire's node if it is the
// first), with ElasticJob's guarantee/started/{i} nodes, in as few round trips as the nodes left by an
// overlapping fire allow.
func (r *Registry) RecordFireStart(job, fire string, expected int, items []int, data []byte) error {
	rec := r.s.opCreate(r.p.fire(job, fire)+fmt.Sprintf("/s-%d-%d-", len(items), expected), data, zk.FlagSequence)
	return r.createLedger(job, fire, rec, GuaranteeStarted, items)
}

// RecordFireEnd records that n items of a fire ended, with ElasticJob's guarantee/completed/{i} nodes.
func (r *Registry) RecordFireEnd(job, fire string, items []int, data []byte) error {
	rec := r.s.opCreate(r.p.fire(job, fire)+fmt.Sprintf("/e-%d-", len(items)), data, zk.FlagSequence)
	return r.createLedger(job, fire, rec, GuaranteeCompleted, items)
}

// createLedger submits the record with the guarantee nodes of items; a guarantee node that exists already
// (left by an overlapping fire) is dropped from the group and the rest sent again; a missing folder is made.
func (r *Registry) createLedger(job, fire string, rec *zk.CreateRequest, which string, items []int) error {
	ops := []any{rec, r.s.opCreate(r.p.guarantee(job, which), nil, 0)}
	for _, i := range items {
		ops = append(ops, r.s.opCreate(r.p.guarantee(job, which)+"/"+strconv.Itoa(i), nil, 0))
	}
	for range len(ops) + 3 {
		_, err := r.b.submit(ops...)
		var oe *OpError
		switch {
		case err == nil:
			return nil
		case !errors.As(err, &oe):
			return err
		case oe.Op > 0 && errors.Is(oe.Err, zk.ErrNodeExists):
			ops = slices.Delete(ops, oe.Op, oe.Op+1)
		case oe.Op == 0 && errors.Is(oe.Err, zk.ErrNoNode):
			// the fire's node, or the folders above it, do not exist yet
			if err := r.s.ensurePath(r.p.fire(job, fire)); err != nil {
				return err
			}
		case errors.Is(oe.Err, zk.ErrNoNode):
			// the guarantee folders went (cleared by a peer that saw them all): make them again, unless the
			// job itself went (a deleted job's nodes must not come back)
			if ok, _, err := r.s.exists(r.p.Config(job)); err != nil || !ok {
				ops = ops[:1]
				continue
			}
			if err := r.s.ensurePath(r.p.guarantee(job, which)); err != nil {
				return err
			}
		default:
			return err
		}
	}
	return fmt.Errorf("record in the ledger of fire %s of job %q: too many retries", fire, job)
}

// TallyFire reads a fire's children: how many items started and ended, and the fences taken (one read).
func (r *Registry) TallyFire(job, fire string) (FireTally, error) {
	kids, _, err := r.s.children(r.p.fire(job, fire))
	if errors.Is(err, zk.ErrNoNode) {
		return FireTally{}, nil
	}
	if err != nil {
		return FireTally{}, err
	}
	t := FireTally{Exists: true}
	for _, k := range kids {
		parts := strings.Split(k, "-")
		switch {
		case parts[0] == "s" && len(parts) == 4:
			n, _ := strconv.Atoi(parts[1])
			exp, _ := strconv.Atoi(parts[2])
			t.Started += n
			t.Expected = max(t.Expected, exp)
		case parts[0] == "e" && len(parts) == 3:
			n, _ := strconv.Atoi(parts[1])
			t.Ended += n
		default:
			t.Fences = append(t.Fences, k)
		}
	}
	return t, nil
}

// FireRecords reads the data of a fire's start and end records.
func (r *Registry) FireRecords(job, fire string) (starts, ends [][]byte, err error) {
	kids, _, err := r.s.children(r.p.fire(job, fire))
	if err != nil {
		return nil, nil, err
	}
	slices.Sort(kids)
	for _, k := range kids {
		if !strings.HasPrefix(k, "s-") && !strings.HasPrefix(k, "e-") {
			continue
		}
		data, _, err := r.s.get(r.p.fire(job, fire) + "/" + k)
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		if k[0] == 's' {
			starts = append(starts, data)
		} else {
			ends = append(ends, data)
		}
	}
	return starts, ends, nil
}

// FenceFire creates a fence node of a fire: true for the one peer that created it.
func (r *Registry) FenceFire(job, fire, fence string) (bool, error) {
	err := r.s.create(r.p.fire(job, fire)+"/"+fence, nil, 0)
	if errors.Is(err, zk.ErrNoNode) {
		if err = r.s.ensurePath(r.p.fire(job, fire)); err == nil {
			err = r.s.create(r.p.fire(job, fire)+"/"+fence, nil, 0)
		}
	}
	if errors.Is(err, zk.ErrNodeExists) {
		return false, nil
	}
	return err == nil, err
}

// FenceEvent creates the fence node of one event not tied to a fire's ledger (key: job-unique, e.g. the fire's
// time and the event's kind): true for the one peer that created it. DropEventFences deletes old ones.
func (r *Registry) FenceEvent(job, key string) (bool, error) {
	p := r.p.alertFences(job) + "/" + key
	err := r.s.create(p, nil, 0)
	if errors.Is(err, zk.ErrNoNode) {
		if err = r.s.ensurePath(r.p.alertFences(job)); err == nil {
			err = r.s.create(p, nil, 0)
		}
	}
	if errors.Is(err, zk.ErrNodeExists) {
		return false, nil
	}
	return err == nil, err
}

// EventFences lists a job's event fences; DropEventFence deletes one.
func (r *Registry) EventFences(job string) ([]string, error) {
	kids, _, err := r.s.children(r.p.alertFences(job))
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	return kids, err
}

// DropEventFence deletes one event fence (gone already is fine).
func (r *Registry) DropEventFence(job, key string) error {
	err := r.s.del(r.p.alertFences(job)+"/"+key, -1)
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	return err
}

// Fires lists the fires of a job the ledger holds.
func (r *Registry) Fires(job string) ([]string, error) {
	kids, _, err := r.s.children(r.p.firesOf(job))
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	return kids, err
}

// DropFire deletes a fire's ledger (its children, then its node).
func (r *Registry) DropFire(job, fire string) error {
	kids, _, err := r.s.children(r.p.fire(job, fire))
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	if err != nil {
		return err
	}
	ops := make([]any, 0, len(kids)+1)
	for _, k := range kids {
		ops = append(ops, opDelete(r.p.fire(job, fire)+"/"+k, -1))
	}
	ops = append(ops, opDelete(r.p.fire(job, fire), -1))
	_, err = r.b.submit(ops...)
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	return err
}

// ClearGuarantee deletes guarantee/{which} and its children (ElasticJob's clearAllStartedInfo and
// clearAllCompletedInfo), best effort: an overlapping fire may be adding children meanwhile.
func (r *Registry) ClearGuarantee(job, which string) error {
	p := r.p.guarantee(job, which)
	kids, _, err := r.s.children(p)
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	if err != nil {
		return err
	}
	ops := make([]any, 0, len(kids)+1)
	for _, k := range kids {
		ops = append(ops, opDelete(p+"/"+k, -1))
	}
	ops = append(ops, opDelete(p, -1))
	_, err = r.b.submit(ops...)
	if errors.Is(err, zk.ErrNoNode) || errors.Is(err, zk.ErrNotEmpty) {
		return nil
	}
	return err
}

// ReadAlertState reads a job's alert state and its version (-1: none yet).
func (r *Registry) ReadAlertState(job string) ([]byte, int32, error) {
	data, st, err := r.s.get(r.p.alertState(job))
	if errors.Is(err, zk.ErrNoNode) {
		return nil, -1, nil
	}
	if err != nil {
		return nil, -1, err
	}
	return data, st.Version, nil
}

// WriteAlertState writes a job's alert state if it still has version (-1: create it); ErrStateChanged if not.
func (r *Registry) WriteAlertState(job string, data []byte, version int32) error {
	var err error
	if version < 0 {
		err = r.s.create(r.p.alertState(job), data, 0)
		if errors.Is(err, zk.ErrNoNode) {
			if err = r.s.ensurePath(parent(r.p.alertState(job))); err == nil {
				err = r.s.create(r.p.alertState(job), data, 0)
			}
		}
	} else {
		_, err = r.s.set(r.p.alertState(job), data, version)
	}
	if errors.Is(err, zk.ErrNodeExists) || errors.Is(err, zk.ErrBadVersion) || (version >= 0 && errors.Is(err, zk.ErrNoNode)) {
		return ErrStateChanged
	}
	return err
}

// DropAlertState deletes a job's alert state (the job was deleted).
func (r *Registry) DropAlertState(job string) error {
	err := r.s.del(r.p.alertState(job), -1)
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	return err
}

// ReadAlertDefaults reads the cluster's default alert rules (nil: none set).
func (r *Registry) ReadAlertDefaults() ([]byte, error) {
	data, _, err := r.s.get(r.p.AlertDefaults())
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	return data, err
}

// WriteAlertDefaults replaces the cluster's default alert rules.
func (r *Registry) WriteAlertDefaults(data []byte) error {
	_, err := r.s.set(r.p.AlertDefaults(), data, -1)
	if errors.Is(err, zk.ErrNoNode) {
		if err = r.s.ensurePath(parent(r.p.AlertDefaults())); err != nil {
			return err
		}
		err = r.s.create(r.p.AlertDefaults(), data, 0)
		if errors.Is(err, zk.ErrNodeExists) {
			_, err = r.s.set(r.p.AlertDefaults(), data, -1)
		}
	}
	return err
}
