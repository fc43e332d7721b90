package workflow

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// The kinds of the engine's inbox messages.
const (
	MsgStart  = "start"  // a run was made: start it (or skip it, by the overlap policy)
	MsgCancel = "cancel" // cancel a run
	MsgRetry  = "retry"  // retry a run from its failed nodes
	MsgFire   = "fire"   // a node's fire ended (posted by the peer that closed the fire's ledger)
)

// Message is one message of the engine's inbox.
type Message struct {
	Kind     string `json:"kind"`
	Workflow string `json:"workflow,omitempty"`
	Run      string `json:"run,omitempty"`
	Reason   string `json:"reason,omitempty"`
	// MsgFire: the fire's job and key, and how its items ended.
	Job       string          `json:"job,omitempty"`
	Fire      string          `json:"fire,omitempty"`
	Items     int             `json:"items,omitempty"`
	Succeeded int             `json:"succeeded,omitempty"`
	Error     string          `json:"error,omitempty"`
	Output    json.RawMessage `json:"output,omitempty"`
}

// ItemOutput returns the `output` member of an item's response body (a JSON object), if it has one of at
// most MaxOutputSize bytes. The body is what the history keeps of it (the response excerpt, 1 KB by default).
func ItemOutput(body string) json.RawMessage {
	if len(body) == 0 || body[0] != '{' {
		return nil
	}
	var v struct {
		Output json.RawMessage `json:"output"`
	}
	if json.Unmarshal([]byte(body), &v) != nil || len(v.Output) == 0 || len(v.Output) > MaxOutputSize ||
		bytes.Equal(v.Output, []byte("null")) {
		return nil
	}
	var out bytes.Buffer
	if json.Compact(&out, v.Output) != nil {
		return nil
	}
	return out.Bytes()
}

// NodeOutput folds the items' outputs into a node's output: an object keyed by item number ({"0": ...}),
// nil when no item gave one or when the whole is over MaxOutputSize (the caller says so).
func NodeOutput(items map[int]json.RawMessage) (json.RawMessage, bool) {
	if len(items) == 0 {
		return nil, true
	}
	obj := make(map[string]json.RawMessage, len(items))
	for i, o := range items {
		obj[strconv.Itoa(i)] = o
	}
	b, err := json.Marshal(obj)
	if err != nil || len(b) > MaxOutputSize {
		return nil, false
	}
	return b, true
}
