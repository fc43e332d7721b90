package zk

import "encoding/binary"

// ejserver: the two structs of every packet the receive loop reads, decoded by hand. A recursive watch
// brings a peer three events per item its cluster runs, each a header and a watcherEvent; decodePacket took
// reflection and an allocation per field for them. The result is decodePacket's, byte for byte, and so is
// the error of a short buffer (decodefast_test.go).

// Decode decodes a reply header (16 bytes).
func (h *responseHeader) Decode(buf []byte) (int, error) {
	if len(buf) < 16 {
		return 0, ErrShortBuffer
	}
	h.Xid = int32(binary.BigEndian.Uint32(buf))
	h.Zxid = int64(binary.BigEndian.Uint64(buf[4:]))
	h.Err = ErrCode(int32(binary.BigEndian.Uint32(buf[12:])))
	return 16, nil
}

// Decode decodes a watch notification: its type, the session's state, and the path.
func (e *watcherEvent) Decode(buf []byte) (int, error) {
	if len(buf) < 12 {
		return 0, ErrShortBuffer
	}
	e.Type = EventType(int32(binary.BigEndian.Uint32(buf)))
	e.State = State(int32(binary.BigEndian.Uint32(buf[4:])))
	ln := int(binary.BigEndian.Uint32(buf[8:]))
	if ln > len(buf)-12 {
		return 0, ErrShortBuffer
	}
	e.Path = string(buf[12 : 12+ln])
	return 12 + ln, nil
}
