package backfill

import (
	"crypto/sha256"
	"encoding/binary"
	"time"

	"github.com/google/uuid"
)

// ExecutionID is the webhook-id of one item of one fire of a backfill: the same on every peer, so a fire that
// was in flight when its peer stopped is re-sent by the next owner under the same id and a receiver that
// dedupes on webhook-id sees it once. It is laid out as a UUIDv7 whose time is the fire's scheduled time, so
// a backfill's ids sort like the fires they stand for; the rest is a hash of the backfill, the time and the
// item.
func ExecutionID(backfillID string, at time.Time, item int) string {
	h := sha256.New()
	h.Write([]byte(backfillID))
	var buf [20]byte
	binary.BigEndian.PutUint64(buf[0:8], uint64(at.Unix()))
	binary.BigEndian.PutUint32(buf[8:12], uint32(at.Nanosecond()))
	binary.BigEndian.PutUint64(buf[12:20], uint64(item))
	h.Write(buf[:])
	sum := h.Sum(nil)
	var u uuid.UUID
	ms := uint64(max(at.UnixMilli(), 0))
	u[0], u[1], u[2], u[3], u[4], u[5] = byte(ms>>40), byte(ms>>32), byte(ms>>24), byte(ms>>16), byte(ms>>8), byte(ms)
	copy(u[6:], sum[:10])
	u[6] = 0x70 | u[6]&0x0f // version 7
	u[8] = 0x80 | u[8]&0x3f // RFC 4122 variant
	return u.String()
}
