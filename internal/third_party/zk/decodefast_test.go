package zk

import (
	"bytes"
	"encoding/binary"
	"net"
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
