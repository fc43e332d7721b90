package zk

import (
	"bytes"
	"encoding/binary"
	"net"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"
)

// The structs decodefast.go decodes by hand, as decodePacket decodes them by reflection: the same fields in
// the same order, without Decode methods.
type responseHeaderFields struct {
	Xid  int32
	Zxid int64
	Err  ErrCode
}

type watcherEventFields struct {
	Type  EventType
	State State
	Path  string
}

func FuzzDecodeByHandMatchesReflection(f *testing.F) {
	ev := make([]byte, 12+len("/ns/job/sharding/0/running"))
	binary.BigEndian.PutUint32(ev, uint32(EventNodeCreated))
	binary.BigEndian.PutUint32(ev[4:], uint32(StateHasSession))
	binary.BigEndian.PutUint32(ev[8:], uint32(len("/ns/job/sharding/0/running")))
	copy(ev[12:], "/ns/job/sharding/0/running")
	f.Add(append([]byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 1, 2, 0xff, 0xff, 0xff, 0x8e}, ev...))
	f.Add([]byte{0, 0, 0, 1})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 3, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, buf []byte) {
		// the packet alone (capacity = length): decodePacket slices a string up to the buffer's capacity, so
		// behind a short packet it read whatever the buffer held from earlier packets; by hand it is
		// ErrShortBuffer, which it is meant to be
		buf = buf[:len(buf):len(buf)]
		var h responseHeader
		var hr responseHeaderFields
		n, err := h.Decode(buf)
		nr, errR := decodePacket(buf, &hr)
		if (err != nil) != (errR != nil) || (err != nil && err != errR) {
			t.Fatalf("header: by hand %v, by reflection %v", err, errR)
		}
		if err == nil && (n != nr || h != responseHeader(hr)) {
			t.Fatalf("header: by hand %+v (%d bytes), by reflection %+v (%d bytes)", h, n, hr, nr)
		}
		if len(buf) < 16 {
			return
		}
		var e watcherEvent
		var er watcherEventFields
		n, err = e.Decode(buf[16:])
		nr, errR = decodePacket(buf[16:len(buf):len(buf)], &er)
		if (err != nil) != (errR != nil) || (err != nil && err != errR) {
			t.Fatalf("event: by hand %v, by reflection %v", err, errR)
		}
		if err == nil && (n != nr || e != watcherEvent(er)) {
			t.Fatalf("event: by hand %+v (%d bytes), by reflection %+v (%d bytes)", e, n, er, nr)
		}
	})
}

// A watch event, header and body, decodes with one allocation (its path) in the receive loop's calls; a
// Stat, which has no Decode of its own, without a copy of itself (decodePacket boxed a copy of every struct
// before: 2 allocations here).
func TestDecodeAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	buf := make([]byte, 16+12+len("/ns/job/sharding/0/running"))
	binary.BigEndian.PutUint32(buf, 0xffffffff)
	binary.BigEndian.PutUint32(buf[24:], uint32(len("/ns/job/sharding/0/running")))
	copy(buf[28:], "/ns/job/sharding/0/running")
	got := testing.AllocsPerRun(100, func() {
		var h responseHeader
		var e watcherEvent
		if _, err := h.Decode(buf); err != nil {
			t.Fatal(err)
		}
		if _, err := e.Decode(buf[16:]); err != nil {
			t.Fatal(err)
		}
		sink = e.Path
	})
	if got > 1 {
		t.Errorf("a watch event decodes with %.0f allocations, want 1 (its path)", got)
	}
	stat := make([]byte, 68)
	got = testing.AllocsPerRun(100, func() {
		var s Stat
		if _, err := decodePacket(stat, &s); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("a Stat: %.0f allocations", got)
	if got > 1 {
		t.Errorf("a Stat decodes with %.0f allocations, want 1 (the Stat, which the test hands over as an interface)", got)
	}
}

var sink string

// packetConn is a net.Conn that reads the given bytes, then io.EOF; SetReadDeadline does nothing.
type packetConn struct {
	net.Conn
	r *bytes.Reader
}

func (c packetConn) Read(p []byte) (int, error)      { return c.r.Read(p) }
func (c packetConn) SetReadDeadline(time.Time) error { return nil }

// The receive loop's allocations for a watch event are the event's path alone: its reply header stays on
// the stack (its address, passed to a request's callback, made it escape: one allocation per packet), and
// header and event are decoded by hand.
func TestRecvLoopAllocatesAnEventsPathAlone(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	const n = 1000
	path := "/ns/job/sharding/0/running"
	var stream []byte
	for i := 0; i < n; i++ {
		pkt := make([]byte, 4+16+12+len(path))
		binary.BigEndian.PutUint32(pkt, uint32(len(pkt)-4))
		binary.BigEndian.PutUint32(pkt[4:], 0xffffffff) // xid -1: a watch event
		binary.BigEndian.PutUint32(pkt[20:], uint32(EventNodeCreated))
		binary.BigEndian.PutUint32(pkt[24:], uint32(StateHasSession))
		binary.BigEndian.PutUint32(pkt[28:], uint32(len(path)))
		copy(pkt[32:], path)
		stream = append(stream, pkt...)
	}
	var got int
	c := &Conn{watchers: map[watchPathType][]chan Event{}, logger: DefaultLogger, recvTimeout: time.Second,
		eventCallback: func(Event) { got++ }}
	run := func() {
		if err := c.recvLoop(packetConn{r: bytes.NewReader(stream)}); err == nil || !strings.Contains(err.Error(), "EOF") {
			t.Fatalf("recvLoop: %v", err)
		}
	}
	run() // warm
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	run()
	runtime.ReadMemStats(&after)
	// per packet; the loop's own buffers (~3 allocations a run) are spread over the n packets
	perEvent := float64(after.Mallocs-before.Mallocs) / n
	t.Logf("%.2f allocations per event", perEvent)
	if got != 2*n {
		t.Fatalf("%d events, want %d", got, 2*n)
	}
	if perEvent > 1.05 {
		t.Errorf("%.2f allocations per event, want 1 (its path)", perEvent)
	}
}

// multiHeaderFields and statFields are multiHeader and Stat without their Decode methods: what reflection
// decodes.
type multiHeaderFields struct {
	Type int32
	Done bool
	Err  ErrCode
}

type statFields struct {
	Czxid, Mzxid, Ctime, Mtime  int64
	Version, Cversion, Aversion int32
	EphemeralOwner              int64
	DataLength, NumChildren     int32
	Pzxid                       int64
}

// multiResponseByReflection is v1.0.4's multiResponse.Decode, on the types above.
func multiResponseByReflection(buf []byte, r *multiResponse) (total int, multiErr error) {
	defer func() {
		if p := recover(); p != nil {
			// decodePacket recovers a slice bound only: a bool read past the end (a header cut after its type)
			// is an index out of range, which panicked out of the receive loop; by hand it is a short buffer
			e, ok := p.(runtime.Error)
			if !ok || !(strings.HasPrefix(e.Error(), "runtime error: slice bounds out of range") ||
				strings.HasPrefix(e.Error(), "runtime error: index out of range")) {
				panic(p)
			}
			multiErr = ErrShortBuffer
		}
	}()
	r.Ops = make([]multiResponseOp, 0)
	r.DoneHeader = multiHeader{-1, true, -1}
	for {
		header := &multiHeaderFields{}
		n, err := decodePacketValue(buf[total:], reflect.ValueOf(header))
		if err != nil {
			return total, err
		}
		total += n
		if header.Done {
			r.DoneHeader = multiHeader(*header)
			break
		}
		res := multiResponseOp{Header: multiHeader(*header)}
		var w reflect.Value
		var st *statFields
		switch header.Type {
		default:
			return total, ErrAPIError
		case opError:
			w = reflect.ValueOf(&res.Err)
		case opCreate:
			w = reflect.ValueOf(&res.String)
		case opSetData:
			st = new(statFields)
			w = reflect.ValueOf(st)
		case opCheck, opDelete:
		}
		if w.IsValid() {
			n, err := decodePacketValue(buf[total:], w)
			if err != nil {
				return total, err
			}
			total += n
		}
		if st != nil {
			s := Stat(*st)
			res.Stat = &s
		}
		r.Ops = append(r.Ops, res)
		if multiErr == nil && res.Err != errOk {
			multiErr = res.Err.toError()
		}
	}
	return total, multiErr
}

func FuzzMultiResponseByHandMatchesReflection(f *testing.F) {
	op := func(typ int32, done bool, err int32, body ...byte) []byte {
		b := make([]byte, 9, 9+len(body))
		binary.BigEndian.PutUint32(b, uint32(typ))
		if done {
			b[4] = 1
		}
		binary.BigEndian.PutUint32(b[5:], uint32(err))
		return append(b, body...)
	}
	path := []byte("/ns/job/sharding/0/running")
	create := append(binary.BigEndian.AppendUint32(nil, uint32(len(path))), path...)
	stat := make([]byte, statLen)
	for i := range stat {
		stat[i] = byte(i * 7)
	}
	var ok []byte
	ok = append(ok, op(opCheck, false, 0)...)
	ok = append(ok, op(opCheck, false, 0)...)
	ok = append(ok, op(opCreate, false, 0, create...)...)
	ok = append(ok, op(opDelete, false, 0)...)
	ok = append(ok, op(opSetData, false, 0, stat...)...)
	ok = append(ok, op(-1, true, -1)...)
	f.Add(ok)
	var failed []byte
	failed = append(failed, op(opError, false, 0, 0, 0, 0, 0)...)
	failed = append(failed, op(opError, false, int32(errNodeExists), 0xff, 0xff, 0xff, 0x92)...)
	failed = append(failed, op(-1, true, -1)...)
	f.Add(failed)
	f.Add(ok[:20])
	f.Add(op(99, false, 0))
	f.Fuzz(func(t *testing.T, buf []byte) {
		buf = buf[:len(buf):len(buf)] // see FuzzDecodeByHandMatchesReflection
		var got, want multiResponse
		n, err := got.Decode(buf)
		nw, errW := multiResponseByReflection(buf, &want)
		if (err == nil) != (errW == nil) || (err != nil && err.Error() != errW.Error()) {
			t.Fatalf("by hand %v, by reflection %v", err, errW)
		}
		if err == ErrShortBuffer {
			return // how far each got before it is not part of the contract
		}
		if n != nw || !reflect.DeepEqual(got, want) {
			t.Fatalf("by hand %+v (%d bytes), by reflection %+v (%d bytes)", got, n, want, nw)
		}
	})
}

// A multi's answer allocates its ops' slice and what they hold (a created path, a set's Stat), not a header
// per op: four deletes' answer took 12 allocations by v1.0.4's reflection (multiResponseByReflection), 3 by
// hand.
func TestMultiResponseAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	var buf []byte
	for i := 0; i < 4; i++ {
		buf = append(buf, 0, 0, 0, byte(opDelete), 0, 0, 0, 0, 0)
	}
	buf = append(buf, 0xff, 0xff, 0xff, 0xff, 1, 0xff, 0xff, 0xff, 0xff)
	var r multiResponse
	got := testing.AllocsPerRun(100, func() {
		if _, err := r.Decode(buf); err != nil {
			t.Fatal(err)
		}
	})
	// the slice grown to 1, 2 and 4 ops
	if got > 4 {
		t.Errorf("four deletes' answer: %.0f allocations, want at most 4", got)
	}
}
