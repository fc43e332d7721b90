package backfill

import (
	"errors"
	"testing"
	"time"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/cronexpr"
)

func mustSchedule(t testing.TB, expr, tz string) Schedule {
	t.Helper()
	loc, err := cronexpr.LoadLocation(tz)
	if err != nil {
		t.Fatal(err)
	}
	s, err := cronexpr.Parse(expr, loc)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func ts(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func fires(r Range) []time.Time {
	var out []time.Time
	for t, ok := r.Next(time.Time{}); ok; t, ok = r.Next(t) {
		out = append(out, t)
	}
	return out
}

func TestRangeFires(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		cron, tz string
		from, to string
		allow    func(time.Time) bool
		want     []string
	}{
		{name: "both ends inclusive", cron: "0 0 * * * ?", from: "2026-11-01T00:00:00Z", to: "2026-11-01T02:00:00Z",
			want: []string{"2026-11-01T00:00:00Z", "2026-11-01T01:00:00Z", "2026-11-01T02:00:00Z"}},
		{name: "ends between fires", cron: "0 30 * * * ?", from: "2026-11-01T00:10:00Z", to: "2026-11-01T01:40:00Z",
			want: []string{"2026-11-01T00:30:00Z", "2026-11-01T01:30:00Z"}},
		{name: "job's time zone", cron: "0 0 9 * * ?", tz: "Asia/Shanghai", from: "2026-11-01T00:00:00Z", to: "2026-11-03T00:00:00Z",
			want: []string{"2026-11-01T01:00:00Z", "2026-11-02T01:00:00Z"}},
		{name: "DST repeat fires once, as cronexpr documents", cron: "0 30 1 * * ?", tz: "America/New_York",
			from: "2026-11-01T00:00:00Z", to: "2026-11-01T12:00:00Z", want: []string{"2026-11-01T06:30:00Z"}},
		{name: "allow narrows", cron: "0 0 * * * ?", from: "2026-11-01T00:00:00Z", to: "2026-11-01T03:00:00Z",
			allow: func(t time.Time) bool { return t.Hour()%2 == 1 },
			want:  []string{"2026-11-01T01:00:00Z", "2026-11-01T03:00:00Z"}},
		{name: "none in range", cron: "0 0 0 1 1 ?", from: "2026-11-01T00:00:00Z", to: "2026-11-02T00:00:00Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := Range{Schedule: mustSchedule(t, tt.cron, tt.tz), From: ts(tt.from), To: ts(tt.to), Allow: tt.allow}
			got := fires(r)
			if len(got) != len(tt.want) {
				t.Fatalf("fires %v, want %v", got, tt.want)
			}
			for i := range got {
				if !got[i].Equal(ts(tt.want[i])) {
					t.Fatalf("fire %d = %s, want %s", i, got[i], tt.want[i])
				}
			}
			n, err := r.Count(MaxFires)
			if err != nil || n != len(tt.want) {
				t.Fatalf("Count = %d, %v; want %d", n, err, len(tt.want))
			}
		})
	}
}

func TestCountCap(t *testing.T) {
	t.Parallel()
	r := Range{Schedule: mustSchedule(t, "* * * * * ?", ""), From: ts("2026-11-01T00:00:00Z")}
	r.To = r.From.Add((MaxFires - 1) * time.Second) // exactly MaxFires fires
	if n, err := r.Count(MaxFires); err != nil || n != MaxFires {
		t.Fatalf("Count = %d, %v; want %d", n, err, MaxFires)
	}
	r.To = r.To.Add(time.Second)
	_, err := r.Count(MaxFires)
	var e *ejserver.Error
	if !errors.As(err, &e) || e.Code != ejserver.EINVALID || e.Field() != "to" {
		t.Fatalf("Count over the cap = %v, want an invalid-field error on to", err)
	}
}

func TestParse(t *testing.T) {
	t.Parallel()
	now := ts("2026-11-24T00:00:00Z")
	tests := []struct {
		req       Request
		wantField string
		wantOP    string
	}{
		{req: Request{From: "2026-11-01T00:00:00Z", To: "2026-11-02T00:00:00Z"}, wantOP: OverlapBufferOne},
		{req: Request{From: "2026-11-01T08:00:00+08:00", To: "2026-11-02T00:00:00Z", OverlapPolicy: "SKIP"}, wantOP: OverlapSkip},
		{req: Request{From: "2026-11-01T00:00:00Z", To: "2026-11-02T00:00:00Z", OverlapPolicy: "ALLOW"}, wantOP: OverlapAllow},
		{req: Request{To: "2026-11-02T00:00:00Z"}, wantField: "from"},
		{req: Request{From: "yesterday", To: "2026-11-02T00:00:00Z"}, wantField: "from"},
		{req: Request{From: "2026-11-01T00:00:00Z"}, wantField: "to"},
		{req: Request{From: "2026-11-01T00:00:00Z", To: "2026-11-02"}, wantField: "to"},
		{req: Request{From: "2026-11-02T00:00:00Z", To: "2026-11-01T00:00:00Z"}, wantField: "to"},
		{req: Request{From: "2026-11-02T00:00:00Z", To: "2026-11-02T00:00:00Z"}, wantField: "to"},
		{req: Request{From: "2026-11-01T00:00:00Z", To: "2026-11-25T00:00:00Z"}, wantField: "to"},
		{req: Request{From: "2026-11-01T00:00:00Z", To: "2026-11-02T00:00:00Z", OverlapPolicy: "CANCEL_PREVIOUS"}, wantField: "overlapPolicy"},
		{req: Request{From: "2026-11-01T00:00:00Z", To: "2026-11-02T00:00:00Z", OverlapPolicy: "skip"}, wantField: "overlapPolicy"},
	}
	for _, tt := range tests {
		p, err := Parse(tt.req, now)
		if tt.wantField != "" {
			var e *ejserver.Error
			if !errors.As(err, &e) || e.Field() != tt.wantField {
				t.Errorf("Parse(%+v) = %v, want an error on %s", tt.req, err, tt.wantField)
			}
			continue
		}
		if err != nil || p.OverlapPolicy != tt.wantOP || p.From.Location() != time.UTC {
			t.Errorf("Parse(%+v) = %+v, %v", tt.req, p, err)
		}
	}
}

func TestStateMoves(t *testing.T) {
	t.Parallel()
	now := ts("2026-11-24T00:00:00Z")
	p := Parsed{From: ts("2026-11-01T00:00:00Z"), To: ts("2026-11-01T00:00:02Z"), OverlapPolicy: OverlapBufferOne}
	b := New("id", "job", p, 2, "admin", now)
	if b.State != StateRunning || b.Percent() != 0 {
		t.Fatalf("new = %+v", b)
	}
	b, err := b.Claim("peer-a")
	if err != nil || b.Owner != "peer-a" || b.Claims != 1 {
		t.Fatalf("claim = %+v, %v", b, err)
	}
	b = b.Start(p.From)
	b = b.Advance(FireOutcome{At: p.From, Items: 3, Failed: 1}, now)
	if b.Done != 1 || !b.Cursor.Equal(p.From) || !b.Current.IsZero() || b.State != StateRunning || b.Percent() != 50 {
		t.Fatalf("after one fire = %+v", b)
	}
	// the second fire is sent before the first is recorded done (its history commits): it stays current
	b = b.Start(p.From.Add(time.Second))
	if mid := b.Advance(FireOutcome{At: p.From}, now); !mid.Current.Equal(p.From.Add(time.Second)) {
		t.Fatalf("recording an earlier fire done cleared the later one in flight: %+v", mid)
	}
	b = b.Advance(FireOutcome{At: p.From.Add(time.Second), Items: 2, Skipped: 1}, now)
	if b.State != StateDone || b.Items != 5 || b.Failed != 1 || b.Skipped != 1 || b.Owner != "" || b.EndedAt.IsZero() {
		t.Fatalf("after the last fire = %+v", b)
	}
	if _, err := b.Cancel("admin", now); err == nil {
		t.Fatal("cancelling a done backfill succeeded")
	}
	if _, err := b.Claim("peer-b"); err == nil {
		t.Fatal("claiming a done backfill succeeded")
	}
	if again := b.Advance(FireOutcome{At: now}, now); again.Done != 2 {
		t.Fatalf("advance after the end moved it: %+v", again)
	}

	c := New("id2", "job", p, 2, "admin", now)
	c, err = c.Cancel("ops", now)
	if err != nil || c.State != StateCancelled || c.CancelledBy != "ops" {
		t.Fatalf("cancel = %+v, %v", c, err)
	}
	if f := New("id3", "job", p, 2, "", now).Fail("job deleted", now); f.State != StateFailed || f.Reason == "" {
		t.Fatalf("fail = %+v", f)
	}
	if e := New("id4", "job", p, 5, "", now).Exhausted(now); e.State != StateDone || e.Total != 0 {
		t.Fatalf("exhausted = %+v", e)
	}
	if z := New("id5", "job", p, 0, "", now); z.State != StateDone || z.Percent() != 100 {
		t.Fatalf("empty range = %+v", z)
	}
}

func TestPacingDecide(t *testing.T) {
	t.Parallel()
	now := ts("2026-11-24T00:00:00Z")
	tests := []struct {
		name string
		p    Pacing
		s    PaceState
		want Verdict
		wait time.Duration
	}{
		{name: "idle first fire", s: PaceState{FireStart: true}, want: Go},
		{name: "idle item", s: PaceState{}, want: Go},
		{name: "peer busy: yield", s: PaceState{Busy: 300 * time.Millisecond}, want: Yield, wait: 300 * time.Millisecond},
		{name: "busy longer than the hold: yield the hold", s: PaceState{Busy: 5 * time.Second}, want: Yield, wait: DefaultMaxHold},
		{name: "the rest of the hold", s: PaceState{Busy: 5 * time.Second, Held: 700 * time.Millisecond}, want: Yield, wait: 300 * time.Millisecond},
		{name: "hold spent: go though busy", s: PaceState{Busy: 5 * time.Second, Held: time.Second}, want: Go},
		{name: "hold spent long ago", s: PaceState{Busy: time.Hour, Held: time.Hour}, want: Go},
		{name: "a hold of its own", p: Pacing{MaxHold: 200 * time.Millisecond}, s: PaceState{Busy: time.Second, Held: 50 * time.Millisecond}, want: Yield, wait: 150 * time.Millisecond},
		{name: "rate", p: Pacing{Rate: 10}, s: PaceState{FireStart: true, LastFire: now.Add(-40 * time.Millisecond)}, want: RateWait, wait: 60 * time.Millisecond},
		{name: "rate spent", p: Pacing{Rate: 10}, s: PaceState{FireStart: true, LastFire: now.Add(-time.Second)}, want: Go},
		{name: "rate only bounds fires", p: Pacing{Rate: 10}, s: PaceState{LastFire: now}, want: Go},
		{name: "no rate bound", p: Pacing{Rate: -1}, s: PaceState{FireStart: true, LastFire: now}, want: Go},
		{name: "rate before the peer", p: Pacing{Rate: 10}, s: PaceState{FireStart: true, LastFire: now, Busy: 20 * time.Millisecond}, want: RateWait, wait: 100 * time.Millisecond},
		{name: "the peer after the rate", p: Pacing{Rate: 10}, s: PaceState{FireStart: true, LastFire: now.Add(-time.Second), Busy: 20 * time.Millisecond}, want: Yield, wait: 20 * time.Millisecond},
	}
	for _, tt := range tests {
		v, w := tt.p.Decide(now, tt.s)
		if v != tt.want || w != tt.wait {
			t.Errorf("%s: Decide = %s %s; want %s %s", tt.name, v, w, tt.want, tt.wait)
		}
	}
}

// The pacing's guarantees, for any state: a wait is positive exactly when the verdict is not Go; a fire
// yields to a busy peer MaxHold in all at most (minimum progress); it never goes while the peer is busy
// before its hold is spent (the schedule first); and a fire never starts sooner than the rate allows.
func FuzzPacingDecide(f *testing.F) {
	f.Add(int64(0), int64(0), int64(0), int64(0), true, 50.0, int64(0))
	f.Add(int64(time.Hour), int64(900*time.Millisecond), int64(40*time.Millisecond), int64(-time.Second), true, 10.0, int64(time.Second))
	f.Add(int64(time.Second), int64(2*time.Second), int64(0), int64(0), false, -1.0, int64(0))
	f.Fuzz(func(t *testing.T, busy, held, sinceFire, hold int64, fireStart bool, rate float64, maxHold int64) {
		if busy < 0 || held < 0 || sinceFire < 0 || rate != rate || rate > 1e6 || (rate > 0 && rate < 1e-3) {
			t.Skip()
		}
		now := ts("2026-11-24T00:00:00Z")
		p := Pacing{Rate: rate, MaxHold: time.Duration(maxHold)}
		s := PaceState{FireStart: fireStart, Busy: time.Duration(busy), Held: time.Duration(held)}
		if hold >= 0 {
			s.LastFire = now.Add(-time.Duration(sinceFire))
		}
		v, w := p.Decide(now, s)
		d := p.Defaults()
		switch {
		case v == Go && w != 0, v != Go && w <= 0:
			t.Fatalf("%s with a wait of %s", v, w)
		case v == Yield && (s.Held+w > d.MaxHold || w > s.Busy):
			t.Fatalf("yields %s after %s held, beyond the hold %s or the peer's busy %s", w, s.Held, d.MaxHold, s.Busy)
		case v == Go && s.Busy > 0 && s.Held < d.MaxHold:
			t.Fatalf("goes while the peer is busy %s and the fire held only %s of %s", s.Busy, s.Held, d.MaxHold)
		case v == Go && fireStart && d.Rate > 0 && !s.LastFire.IsZero() &&
			now.Sub(s.LastFire) < time.Duration(float64(time.Second)/d.Rate):
			t.Fatalf("a fire starts %s after the last, sooner than rate %v allows", now.Sub(s.LastFire), d.Rate)
		case v == RateWait && !fireStart:
			t.Fatal("the rate held an item that starts no fire")
		}
	})
}

func TestExecutionID(t *testing.T) {
	t.Parallel()
	at := ts("2026-11-01T00:00:00Z")
	a := ExecutionID("b1", at, 0)
	if a != ExecutionID("b1", at, 0) {
		t.Fatal("not deterministic")
	}
	seen := map[string]bool{a: true}
	for _, id := range []string{ExecutionID("b1", at, 1), ExecutionID("b2", at, 0), ExecutionID("b1", at.Add(time.Second), 0)} {
		if seen[id] {
			t.Fatalf("id %s repeats", id)
		}
		seen[id] = true
	}
	if ExecutionID("b1", at, 0) >= ExecutionID("b1", at.Add(time.Second), 0) {
		t.Fatal("ids do not sort by scheduled time")
	}
	if a[14] != '7' {
		t.Fatalf("%s is not laid out as a UUIDv7", a)
	}
}

// FuzzRange: the fires of any range are strictly increasing, inside the range, and Count agrees with them.
func FuzzRange(f *testing.F) {
	f.Add("*/7 * * * * ?", int64(0), int64(3600))
	f.Add("0 0 9 ? * MON-FRI", int64(1_700_000_000), int64(86400*20))
	f.Add("@every 13s", int64(5), int64(999))
	f.Fuzz(func(t *testing.T, expr string, from, length int64) {
		sched, err := cronexpr.Parse(expr, time.UTC)
		if err != nil || length <= 0 || length > 86400*30 || from < 0 || from > 4_000_000_000 {
			return
		}
		r := Range{Schedule: sched, From: time.Unix(from, 0).UTC(), To: time.Unix(from+length, 0).UTC()}
		n, cerr := r.Count(500)
		var prev time.Time
		got := 0
		for at, ok := r.Next(time.Time{}); ok && got <= 500; at, ok = r.Next(at) {
			if at.Before(r.From) || at.After(r.To) || (!prev.IsZero() && !at.After(prev)) {
				t.Fatalf("fire %s out of order or range (prev %s, range %s..%s)", at, prev, r.From, r.To)
			}
			prev = at
			got++
		}
		if (cerr == nil) != (got <= 500) || (cerr == nil && n != got) {
			t.Fatalf("Count = %d, %v; enumerated %d", n, cerr, got)
		}
	})
}

// FuzzParse: Parse never panics, and what it accepts is an ordered past range with a known policy.
func FuzzParse(f *testing.F) {
	f.Add("2026-11-01T00:00:00Z", "2026-11-02T00:00:00Z", "SKIP")
	f.Add("2026-11-01T00:00:00+08:00", "x", "")
	f.Fuzz(func(t *testing.T, from, to, policy string) {
		now := ts("2026-11-24T00:00:00Z")
		p, err := Parse(Request{From: from, To: to, OverlapPolicy: policy}, now)
		if err != nil {
			return
		}
		if !p.From.Before(p.To) || p.To.After(now) {
			t.Fatalf("accepted %+v", p)
		}
		switch p.OverlapPolicy {
		case OverlapBufferOne, OverlapSkip, OverlapAllow:
		default:
			t.Fatalf("accepted policy %q", p.OverlapPolicy)
		}
	})
}
