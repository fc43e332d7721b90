package cluster

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/go-zookeeper/zk"
)

// The fire ledger: /{namespace}.ejserver/fires/{job}/{fire} records which items of one fire started and
// ended on which peer, so that the peer whose record completes the fire (and only that one) sends the fire's
// afterFire hook and notifications. ElasticJob's guarantee/started and guarantee/completed nodes are per job
// and cannot tell two fires apart (an async item still running when the next fire starts); the ledger is per
// fire. For a job with hooks (ElasticJob's distributed listeners) the guarantee nodes are still written as
// ElasticJob writes them: one child per item, cleared by the peer that saw them all.
//
// A fire's children, each created once and never written again:
//
//	s-{n}-{expected}-{peer}-{seq}  a peer started n items of a fire it expects `expected` items of (data: the caller's)
//	e-{n}-{peer}-{seq}             n items ended on a peer (data: the caller's: outcomes)
//	{fence}                        created by exactly one peer: "began" (beforeFire), "partial"...
//
// The fire's end is fenced by its deletion: the peer whose multi deletes the fire's node and every child it
// read is the one that closes the fire (a record added meanwhile fails the multi: read again).

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

// Errors of the fire ledger and the alert state.
var (
	// ErrStateChanged: the alert state node was written since it was read: read it again and decide again.
	ErrStateChanged = errors.New("the alert state changed meanwhile")
	// ErrFireGone: the fire's ledger is gone (closed by a peer, or never started).
	ErrFireGone = errors.New("the fire's ledger is gone")
	// ErrFireChanged: a record was added to the fire since it was read: read it again.
	ErrFireChanged = errors.New("the fire's ledger changed meanwhile")
)

// FireRecord is one start or end record of a fire, by the name of its node.
type FireRecord struct {
	Name  string
	Start bool
	N     int
	Peer  string
}

// FireTally is what a fire's children say without reading their data.
type FireTally struct {
	Started, Ended, Expected int
	Records                  []FireRecord
	Fences                   []string
	Exists                   bool
}

// Has reports whether a fence node exists.
func (t FireTally) Has(fence string) bool { return slices.Contains(t.Fences, fence) }

// TriggerClaim is a trigger node this peer read (PeekTrigger) and has not consumed yet. A workflow node's fire
// consumes it in the transaction that records the fire's start (RecordFireStart): a peer lost between reading
// its trigger and recording its items' start (a kill -9, a session lost while its sharding settles) leaves the
// trigger waiting, which the workflow engine hands on to the items' new owners, instead of items no peer
// starts (they were LOST when the trigger was deleted as it was read).
type TriggerClaim struct {
	Job     string
	Version int32
	// consumed: a start record deleted the node (RecordFireStart), so DropTrigger has nothing to do
	consumed bool
}

// ErrTriggerTaken: the claimed trigger node is gone or was rewritten (the workflow engine handed it on,
// taking this peer for lost): its items are not this peer's to run.
var ErrTriggerTaken = errors.New("the trigger was handed on or deleted meanwhile")

// RecordFireStart records that this peer (peer: a short tag of it) started items of a fire, creating the fire's
// node if it is the first, with ElasticJob's guarantee/started/{i} nodes when guarantee is set, and deleting
// the trigger node of a claim in the same transaction (ErrTriggerTaken, nothing recorded, when that node is
// no longer the version claimed). It returns the record's node name.
func (r *Registry) RecordFireStart(job, fire, peer string, expected int, items []int, data []byte, guarantee bool, claim *TriggerClaim) (string, error) {
	if _, ok := r.firesMade.Load(job); !ok {
		if err := r.s.ensurePath(r.p.firesOf(job)); err != nil {
			return "", err
		}
		r.firesMade.Store(job, struct{}{})
	}
	ops := []any{r.s.opCreate(r.p.fire(job, fire), nil, 0),
		r.s.opCreate(r.p.fire(job, fire)+fmt.Sprintf("/s-%d-%d-%s-", len(items), expected, peer), data, zk.FlagSequence)}
	var tail []any
	if claim != nil {
		tail = append(tail, opDelete(r.p.Trigger(claim.Job, r.me.InstanceID), claim.Version))
	}
	name, err := r.createLedger(job, ops, tail, GuaranteeStarted, items, guarantee, true)
	if err == nil && claim != nil {
		claim.consumed = true
	}
	return name, err
}

// RecordFireEnd records that items of a fire ended on this peer, with ElasticJob's guarantee/completed/{i}
// nodes when guarantee is set; ErrFireGone when the fire was closed already. It returns the record's node name.
func (r *Registry) RecordFireEnd(job, fire, peer string, items []int, data []byte, guarantee bool) (string, error) {
	ops := []any{r.s.opCreate(r.p.fire(job, fire)+fmt.Sprintf("/e-%d-%s-", len(items), peer), data, zk.FlagSequence)}
	return r.createLedger(job, ops, nil, GuaranteeCompleted, items, guarantee, false)
}

// createLedger submits a record's ops with the guarantee nodes of items, and tail (a claimed trigger's delete:
// ErrTriggerTaken when it fails) last. A create of the fire's node (first) that finds it, or a guarantee node
// left by an overlapping fire, is dropped from the group and the rest sent again; a missing guarantee folder
// is made (unless the job went).
func (r *Registry) createLedger(job string, ops, tail []any, which string, items []int, guarantee, start bool) (string, error) {
	withFire := start
	record := 0
	if withFire {
		record = 1
	}
	fireOp := ops[0]
	if guarantee {
		for _, i := range items {
			ops = append(ops, r.s.opCreate(r.p.guarantee(job, which)+"/"+strconv.Itoa(i), nil, 0))
		}
	}
	for range len(ops) + 3 {
		resps, err := r.b.submit(slices.Concat(ops, tail)...)
		var oe *OpError
		switch {
		case err == nil:
			return path.Base(resps[record].String), nil
		case !errors.As(err, &oe):
			return "", err
		case oe.Op >= len(ops) && (errors.Is(oe.Err, zk.ErrNoNode) || errors.Is(oe.Err, zk.ErrBadVersion)):
			return "", ErrTriggerTaken
		case withFire && oe.Op == 0 && errors.Is(oe.Err, zk.ErrNodeExists):
			ops, withFire, record = ops[1:], false, 0 // another peer made the fire's node
		case oe.Op > record && errors.Is(oe.Err, zk.ErrNodeExists):
			ops = slices.Delete(ops, oe.Op, oe.Op+1)
		case oe.Op <= record && errors.Is(oe.Err, zk.ErrNoNode):
			if !start {
				return "", ErrFireGone // an end record for a fire that was closed
			}
			// the fires folder is missing, or the fire was closed between our two tries: make them again
			r.firesMade.Delete(job)
			if err := r.s.ensurePath(r.p.firesOf(job)); err != nil {
				return "", err
			}
			r.firesMade.Store(job, struct{}{})
			if !withFire {
				ops, withFire, record = append([]any{fireOp}, ops...), true, 1
			}
		case errors.Is(oe.Err, zk.ErrNoNode):
			// the guarantee folder is missing: make it, unless the job itself went (a deleted job's nodes
			// must not come back)
			if ok, _, err := r.s.exists(r.p.Config(job)); err != nil || !ok {
				ops = ops[:record+1]
				continue
			}
			if err := r.s.ensurePath(r.p.guarantee(job, which)); err != nil {
				return "", err
			}
		default:
			return "", err
		}
	}
	return "", fmt.Errorf("record in the fire ledger of job %q: too many retries", job)
}

// TallyFire reads a fire's children: its records and fences (one read).
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
		case parts[0] == "s" && len(parts) == 5:
			n, _ := strconv.Atoi(parts[1])
			exp, _ := strconv.Atoi(parts[2])
			t.Started += n
			t.Expected = max(t.Expected, exp)
			t.Records = append(t.Records, FireRecord{Name: k, Start: true, N: n, Peer: parts[3]})
		case parts[0] == "e" && len(parts) == 4:
			n, _ := strconv.Atoi(parts[1])
			t.Ended += n
			t.Records = append(t.Records, FireRecord{Name: k, N: n, Peer: parts[2]})
		default:
			t.Fences = append(t.Fences, k)
		}
	}
	slices.SortFunc(t.Records, func(a, b FireRecord) int { return strings.Compare(a.Name, b.Name) })
	return t, nil
}

// FireRecordData reads the data of the named records of a fire (a record gone meanwhile: ErrFireGone).
// The reads are pipelined on the session (one round trip or so, not one per record).
func (r *Registry) FireRecordData(job, fire string, names []string) ([][]byte, error) {
	out := make([][]byte, len(names))
	err := concurrently(len(names), func(i int) error {
		data, _, err := r.s.get(r.p.fire(job, fire) + "/" + names[i])
		if errors.Is(err, zk.ErrNoNode) {
			return ErrFireGone
		}
		out[i] = data
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// FenceFire creates a fence node of a fire: true for the one peer that created it (false too when the fire is
// gone).
func (r *Registry) FenceFire(job, fire, fence string) (bool, error) {
	err := r.s.create(r.p.fire(job, fire)+"/"+fence, nil, 0)
	if errors.Is(err, zk.ErrNodeExists) || errors.Is(err, zk.ErrNoNode) {
		return false, nil
	}
	return err == nil, err
}

// CloseFire deletes a fire's ledger, fenced: in one multi its node and every child tally read. It returns nil
// for the one peer whose multi did it, ErrFireGone when another peer closed it, ErrFireChanged when a child
// was added since tally (read again). A report (a workflow node's fire) is posted to the workflow engine's
// inbox in the same multi: the fire's end reaches the engine exactly once, or the fire stays open.
func (r *Registry) CloseFire(job, fire string, t FireTally, report []byte) error {
	ops := make([]any, 0, len(t.Records)+len(t.Fences)+2)
	if report != nil {
		op, err := r.inboxOp(report)
		if err != nil {
			return err
		}
		ops = append(ops, op)
	}
	for _, rec := range t.Records {
		ops = append(ops, opDelete(r.p.fire(job, fire)+"/"+rec.Name, -1))
	}
	for _, f := range t.Fences {
		ops = append(ops, opDelete(r.p.fire(job, fire)+"/"+f, -1))
	}
	ops = append(ops, opDelete(r.p.fire(job, fire), -1))
	_, err := r.b.submit(ops...)
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return ErrFireGone
	case errors.Is(err, zk.ErrNotEmpty):
		return ErrFireChanged
	}
	return err
}

// FenceEvent creates the fence node of one event (key: job-unique, e.g. the fire's key and the event's kind):
// true for the one peer that created it. DropEventFence deletes old ones.
func (r *Registry) FenceEvent(job, key string) (bool, error) {
	return r.fence(r.p.alertFences(job), key)
}

// fence creates dir/key if absent: true for the caller that created it.
func (r *Registry) fence(dir, key string) (bool, error) {
	p := dir + "/" + key
	err := r.s.create(p, nil, 0)
	if errors.Is(err, zk.ErrNoNode) {
		if err = r.s.ensurePath(dir); err == nil {
			err = r.s.create(p, nil, 0)
		}
	}
	if errors.Is(err, zk.ErrNodeExists) {
		return false, nil
	}
	return err == nil, err
}

// EventFences lists a job's event fences.
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

// ClearGuarantee deletes the children of guarantee/{which} (ElasticJob's clearAllStartedInfo and
// clearAllCompletedInfo; the folder stays for the next fire), best effort: an overlapping fire may be adding
// children meanwhile.
func (r *Registry) ClearGuarantee(job, which string) error {
	p := r.p.guarantee(job, which)
	kids, _, err := r.s.children(p)
	if errors.Is(err, zk.ErrNoNode) || (err == nil && len(kids) == 0) {
		return nil
	}
	if err != nil {
		return err
	}
	ops := make([]any, 0, len(kids))
	for _, k := range kids {
		ops = append(ops, opDelete(p+"/"+k, -1))
	}
	_, err = r.b.submit(ops...)
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	return err
}

// ReadAlertState reads a job's alert state and its version (-1: none yet).
func (r *Registry) ReadAlertState(job string) ([]byte, int32, error) {
	return r.readState(r.p.alertState(job))
}

// readState reads a versioned state node (nil, -1: none yet).
func (r *Registry) readState(p string) ([]byte, int32, error) {
	data, st, err := r.s.get(p)
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
	return r.writeState(r.p.alertState(job), data, version)
}

// writeState writes a state node if it still has version (-1: create it); ErrStateChanged if not.
func (r *Registry) writeState(p string, data []byte, version int32) error {
	var err error
	if version < 0 {
		err = r.s.create(p, data, 0)
		if errors.Is(err, zk.ErrNoNode) {
			if err = r.s.ensurePath(parent(p)); err == nil {
				err = r.s.create(p, data, 0)
			}
		}
	} else {
		_, err = r.s.set(p, data, version)
	}
	if errors.Is(err, zk.ErrNodeExists) || errors.Is(err, zk.ErrBadVersion) || (version >= 0 && errors.Is(err, zk.ErrNoNode)) {
		return ErrStateChanged
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

// DropAlertState deletes a job's alert state and its event fences (the job was deleted); gone already is fine.
func (r *Registry) DropAlertState(job string) error {
	if err := r.s.del(r.p.alertState(job), -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
		return err
	}
	kids, err := r.EventFences(job)
	if err != nil {
		return err
	}
	for _, k := range kids {
		if err := r.DropEventFence(job, k); err != nil {
			return err
		}
	}
	if err := r.s.del(r.p.alertFences(job), -1); err != nil && !errors.Is(err, zk.ErrNoNode) && !errors.Is(err, zk.ErrNotEmpty) {
		return err
	}
	r.firesMade.Delete(job)
	return nil
}
