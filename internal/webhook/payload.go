package webhook

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"
	"unsafe"

	"github.com/ejserver/ejserver/receiver"
)

// Payload is the JSON body of a webhook request (DESIGN.md, "The webhook contract"), defined once in the
// receiver package that receivers import. The caller fills in everything but Attempt and Iteration, which
// the Sender sets on each request (Iteration only for streaming DATAFLOW jobs: the webhook-id of iteration
// n > 1 is "{executionId}.{n}").
type Payload = receiver.Payload

// messageID is the webhook-id of an iteration: the executionId, suffixed ".n" for iterations after the first.
func messageID(executionID string, iteration int) string {
	if iteration <= 1 {
		return executionID
	}
	return executionID + "." + strconv.Itoa(iteration)
}

// body encodes the payload for one request.
func payloadBody(p Payload) ([]byte, error) {
	p.ScheduledAt = p.ScheduledAt.UTC()
	if !p.DueAt.IsZero() {
		p.DueAt = p.DueAt.UTC()
	}
	if b, ok := appendPayload(make([]byte, 0, payloadSize(p)), p); ok {
		return b, nil
	}
	return json.Marshal(p)
}

// shardingContextHeader returns the shardingContext header value: JSON, with every non-ASCII character
// escaped (\uXXXX) so the header is plain ASCII whatever the parameters hold.
// The fields are ElasticJob's ShardingContext's, in the order its HTTP job executor (Gson) writes them.
func shardingContextHeader(p Payload) (string, error) {
	// a wide fire's task id makes this ~3 KB for every item: one buffer of the size, then the string
	b := appendShardingContext(make([]byte, 0, 160+len(p.JobName)+len(p.TaskID)+len(p.JobParameter)+len(p.ShardingParameter)), p)
	for _, c := range b {
		if c >= 0x7f {
			return asciiJSON(b), nil
		}
	}
	// the buffer becomes the string, as strings.Builder does it: b is not written to again
	return unsafe.String(unsafe.SliceData(b), len(b)), nil
}

// asciiJSON rewrites JSON from encoding/json so that every rune from 0x7f (DEL, which HTTP forbids in a
// header value and encoding/json leaves raw) up is a \u escape (surrogate pairs above the BMP).
func asciiJSON(b []byte) string {
	ascii := true
	for _, c := range b {
		if c >= 0x7f {
			ascii = false
			break
		}
	}
	if ascii {
		return string(b)
	}
	const hex = "0123456789abcdef"
	out := make([]byte, 0, len(b)+32)
	esc := func(r rune) {
		out = append(out, '\\', 'u', hex[r>>12&0xf], hex[r>>8&0xf], hex[r>>4&0xf], hex[r&0xf])
	}
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		switch {
		case r < 0x7f:
			out = append(out, byte(r))
		case r > 0xffff:
			r -= 0x10000
			esc(0xd800 + (r>>10)&0x3ff)
			esc(0xdc00 + r&0x3ff)
		default:
			esc(r)
		}
		b = b[size:]
	}
	return string(out)
}
