package alert

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/ejserver/ejserver/internal/cluster"
)

// StateNode is one versioned alert-state node in ZooKeeper: a job's or a workflow's.
type StateNode struct {
	Read func() ([]byte, int32, error)
	// Write stores data if the node still has version (-1: create it); cluster.ErrStateChanged if not.
	Write func(data []byte, version int32) error
}

// errKeptChanging: the state node changed under every attempt.
var errKeptChanging = errors.New("alert state kept changing: event dropped")

// Commit applies fn to the state stored in node under a version check (again, up to 8 times, when another
// peer wrote meanwhile) and returns the state written and what to send: whoever writes the state sends, and
// only them. Nothing to send and nothing changed writes nothing. An unreadable state starts afresh.
func Commit(node StateNode, now func() time.Time, fn func(State, time.Time) (State, []Outgoing)) (State, []Outgoing, error) {
	for range 8 {
		data, version, err := node.Read()
		if err != nil {
			return State{}, nil, fmt.Errorf("read the alert state: %w", err)
		}
		var st State
		if len(data) > 0 && json.Unmarshal(data, &st) != nil {
			st = State{}
		}
		next, out := fn(st, now())
		b, err := json.Marshal(next)
		if err != nil {
			return State{}, nil, fmt.Errorf("encode the alert state: %w", err)
		}
		if len(out) == 0 && (string(b) == string(data) || (len(data) == 0 && string(b) == "{}")) {
			return next, nil, nil
		}
		if err := node.Write(b, version); errors.Is(err, cluster.ErrStateChanged) {
			continue
		} else if err != nil {
			return State{}, nil, fmt.Errorf("write the alert state: %w", err)
		}
		return next, out, nil
	}
	return State{}, nil, errKeptChanging
}
