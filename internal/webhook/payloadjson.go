package webhook

import (
	"strconv"
	"time"
	"unicode/utf8"
)

// The body and the shardingContext header of every request are JSON of a fixed shape: they are appended
// here, field by field, into one buffer each, byte for byte as encoding/json writes them
// (FuzzPayloadJSONMatchesEncodingJSON). encoding/json took reflection, an encoder and a buffer grown in steps
// for each, per item.

// appendPayload appends p's JSON as json.Marshal writes it. ok is false when this encoder does not write p
// (a workflow's raw JSON, which encoding/json validates and compacts, or a time json cannot encode): the
// caller then uses encoding/json.
func appendPayload(b []byte, p Payload) (_ []byte, ok bool) {
	if len(p.Workflow) > 0 || !jsonTime(p.ScheduledAt) || (!p.DueAt.IsZero() && !jsonTime(p.DueAt)) {
		return b, false
	}
	b = append(b, `{"jobName":`...)
	b = appendJSONString(b, p.JobName)
	b = append(b, `,"taskId":`...)
	b = appendJSONString(b, p.TaskID)
	b = append(b, `,"executionId":`...)
	b = appendJSONString(b, p.ExecutionID)
	b = append(b, `,"shardingItem":`...)
	b = strconv.AppendInt(b, int64(p.ShardingItem), 10)
	b = append(b, `,"shardingParameter":`...)
	b = appendJSONString(b, p.ShardingParameter)
	b = append(b, `,"shardingTotalCount":`...)
	b = strconv.AppendInt(b, int64(p.ShardingTotalCount), 10)
	b = append(b, `,"jobParameter":`...)
	b = appendJSONString(b, p.JobParameter)
	b = append(b, `,"source":`...)
	b = appendJSONString(b, p.Source)
	b = append(b, `,"scheduledAt":`...)
	b = appendJSONTime(b, p.ScheduledAt)
	b = append(b, `,"attempt":`...)
	b = strconv.AppendInt(b, int64(p.Attempt), 10)
	if p.Iteration != 0 {
		b = append(b, `,"iteration":`...)
		b = strconv.AppendInt(b, int64(p.Iteration), 10)
	}
	b = append(b, `,"instanceId":`...)
	b = appendJSONString(b, p.InstanceID)
	if p.CallbackURL != "" {
		b = append(b, `,"callbackUrl":`...)
		b = appendJSONString(b, p.CallbackURL)
	}
	if p.CallbackToken != "" {
		b = append(b, `,"callbackToken":`...)
		b = appendJSONString(b, p.CallbackToken)
	}
	if p.LeaseSeconds != 0 {
		b = append(b, `,"leaseSeconds":`...)
		b = strconv.AppendInt(b, int64(p.LeaseSeconds), 10)
	}
	if p.JitterMs != 0 {
		b = append(b, `,"jitterMs":`...)
		b = strconv.AppendInt(b, int64(p.JitterMs), 10)
	}
	if !p.DueAt.IsZero() {
		b = append(b, `,"dueAt":`...)
		b = appendJSONTime(b, p.DueAt)
	}
	return append(b, '}'), true
}

// payloadSize is a capacity for p's JSON that holds it unless its strings need escapes.
func payloadSize(p Payload) int {
	return 480 + len(p.JobName) + len(p.TaskID) + len(p.ExecutionID) + len(p.ShardingParameter) +
		len(p.JobParameter) + len(p.Source) + len(p.InstanceID) + len(p.CallbackURL) + len(p.CallbackToken)
}

// appendShardingContext appends the shardingContext header's JSON (shardingContext, as json.Encoder writes
// it, without its newline).
func appendShardingContext(b []byte, p Payload) []byte {
	b = append(b, `{"jobName":`...)
	b = appendJSONString(b, p.JobName)
	b = append(b, `,"taskId":`...)
	b = appendJSONString(b, p.TaskID)
	b = append(b, `,"shardingTotalCount":`...)
	b = strconv.AppendInt(b, int64(p.ShardingTotalCount), 10)
	b = append(b, `,"jobParameter":`...)
	b = appendJSONString(b, p.JobParameter)
	b = append(b, `,"shardingItem":`...)
	b = strconv.AppendInt(b, int64(p.ShardingItem), 10)
	b = append(b, `,"shardingParameter":`...)
	b = appendJSONString(b, p.ShardingParameter)
	return append(b, '}')
}

// jsonTime reports whether time.Time's MarshalJSON encodes t (a year in [0, 9999]).
func jsonTime(t time.Time) bool {
	y := t.Year()
	return y >= 0 && y <= 9999
}

// appendJSONTime appends t as time.Time's MarshalJSON does (RFC 3339 with nanoseconds, quoted); jsonTime(t)
// must hold.
func appendJSONTime(b []byte, t time.Time) []byte {
	b = append(b, '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b, '"')
}

// appendJSONString appends s as a JSON string as encoding/json writes it (HTML escaping on): '"' and '\\'
// escaped, control characters as \b \f \n \r \t or \u00XX, '<' '>' '&' as \u003c \u003e \u0026, U+2028
// and U+2029 escaped, invalid UTF-8 as \ufffd; everything else as is.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
