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

// Decode decodes a multi's per-op header (9 bytes: type, done, error).
func (h *multiHeader) Decode(buf []byte) (int, error) {
	if len(buf) < 9 {
		return 0, ErrShortBuffer
	}
	h.Type = int32(binary.BigEndian.Uint32(buf))
	h.Done = buf[4] != 0
	h.Err = ErrCode(int32(binary.BigEndian.Uint32(buf[5:])))
	return 9, nil
}

// statLen is a Stat's size on the wire.
const statLen = 68

// Decode decodes a Stat (68 bytes).
func (s *Stat) Decode(buf []byte) (int, error) {
	if len(buf) < statLen {
		return 0, ErrShortBuffer
	}
	s.Czxid = int64(binary.BigEndian.Uint64(buf))
	s.Mzxid = int64(binary.BigEndian.Uint64(buf[8:]))
	s.Ctime = int64(binary.BigEndian.Uint64(buf[16:]))
	s.Mtime = int64(binary.BigEndian.Uint64(buf[24:]))
	s.Version = int32(binary.BigEndian.Uint32(buf[32:]))
	s.Cversion = int32(binary.BigEndian.Uint32(buf[36:]))
	s.Aversion = int32(binary.BigEndian.Uint32(buf[40:]))
	s.EphemeralOwner = int64(binary.BigEndian.Uint64(buf[44:]))
	s.DataLength = int32(binary.BigEndian.Uint32(buf[52:]))
	s.NumChildren = int32(binary.BigEndian.Uint32(buf[56:]))
	s.Pzxid = int64(binary.BigEndian.Uint64(buf[60:]))
	return statLen, nil
}

// Decode decodes a multi's answer, op by op, until the done header. Its error is the first op's error, as
// v1.0.4's reflective decoding had it (a header allocated per op there); a malformed answer is ErrAPIError or
// ErrShortBuffer.
func (r *multiResponse) Decode(buf []byte) (int, error) {
	var multiErr error

	r.Ops = make([]multiResponseOp, 0)
	r.DoneHeader = multiHeader{-1, true, -1}
	total := 0
	for {
		var header multiHeader
		n, err := header.Decode(buf[total:])
		if err != nil {
			return total, err
		}
		total += n
		if header.Done {
			r.DoneHeader = header
			break
		}

		res := multiResponseOp{Header: header}
		rest := buf[total:]
		switch header.Type {
		default:
			return total, ErrAPIError
		case opError:
			if len(rest) < 4 {
				return total, ErrShortBuffer
			}
			res.Err = ErrCode(int32(binary.BigEndian.Uint32(rest)))
			total += 4
		case opCreate:
			if len(rest) < 4 {
				return total, ErrShortBuffer
			}
			ln := int(binary.BigEndian.Uint32(rest))
			if ln > len(rest)-4 {
				return total, ErrShortBuffer
			}
			res.String = string(rest[4 : 4+ln])
			total += 4 + ln
		case opSetData:
			res.Stat = new(Stat)
			n, err := res.Stat.Decode(rest)
			if err != nil {
				return total, err
			}
			total += n
		case opCheck, opDelete:
		}
		r.Ops = append(r.Ops, res)
		if multiErr == nil && res.Err != errOk {
			// Use the first error as the error returned from Multi().
			multiErr = res.Err.toError()
		}
	}
	return total, multiErr
}
