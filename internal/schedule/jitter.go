package schedule

import (
	"encoding/binary"
	"hash/fnv"
	"time"
)

// MaxJitterMs bounds jitterMs (one hour).
const MaxJitterMs = 60 * 60 * 1000

// Jitter is the offset, between 0 and maxMs milliseconds inclusive, a fire of job scheduled at t leaves
// after t. It depends on nothing but its arguments (FNV-1a of the job's name and the fire's time in Unix
// milliseconds), so every peer, a failover and a retry agree on it.
func Jitter(job string, t time.Time, maxMs int) time.Duration {
	if maxMs <= 0 {
		return 0
	}
	h := fnv.New64a()
	h.Write([]byte(job))
	var b [9]byte // a separator byte, then the time: "ab"+1 and "a"+"b1" hash apart
	binary.BigEndian.PutUint64(b[1:], uint64(t.UnixMilli()))
	h.Write(b[:])
	return time.Duration(h.Sum64()%uint64(maxMs+1)) * time.Millisecond
}
