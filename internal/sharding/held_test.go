package sharding

import (
	"slices"
	"testing"
	"time"
)

func TestHolders(t *testing.T) {
	fire := time.Date(2026, 11, 25, 3, 34, 57, 0, time.UTC)
	const lead = time.Second
	cutoff := fire.Add(-lead - HoldMargin) // registered by then: holds the fire
	a, b, y := Instance{"a@-@1", "10.0.0.1"}, Instance{"b@-@2", "10.0.0.2"}, Instance{"y@-@9", "10.0.0.3"}
	tests := []struct {
		name             string
		candidates       []Instance
		registered       map[string]time.Time
		wantHold, wantLt []Instance
		wantRecheck      time.Time
	}{
		{"all registered long before: all hold", []Instance{a, b, y},
			map[string]time.Time{a.ID: fire.Add(-time.Hour), b.ID: fire.Add(-time.Hour), y.ID: fire.Add(-time.Minute)},
			[]Instance{a, b, y}, nil, time.Time{}},
		{"a restarted peer's new instance, registered after the hand-off, waits", []Instance{a, b, y},
			map[string]time.Time{a.ID: fire.Add(-time.Hour), b.ID: fire.Add(-time.Hour), y.ID: fire.Add(2 * time.Second)},
			[]Instance{a, b}, []Instance{y}, fire.Add(2*time.Second + HoldMargin + 30*time.Second)},
		{"registered exactly at the cutoff holds", []Instance{a, y},
			map[string]time.Time{a.ID: fire.Add(-time.Hour), y.ID: cutoff},
			[]Instance{a, y}, nil, time.Time{}},
		{"registered just after the cutoff waits", []Instance{a, y},
			map[string]time.Time{a.ID: fire.Add(-time.Hour), y.ID: cutoff.Add(time.Millisecond)},
			[]Instance{a}, []Instance{y}, cutoff.Add(time.Millisecond + HoldMargin + 30*time.Second)},
		{"an instance whose registration is unknown waits (counted as registered at the fire)", []Instance{a, y},
			map[string]time.Time{a.ID: fire.Add(-time.Hour)},
			[]Instance{a}, []Instance{y}, fire.Add(HoldMargin + 30*time.Second)},
		{"nobody holds it: all of them, nobody waits", []Instance{a, y},
			map[string]time.Time{a.ID: fire, y.ID: fire.Add(time.Second)},
			[]Instance{a, y}, nil, time.Time{}},
		{"no candidate", nil, nil, nil, nil, time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := slices.Clone(tt.candidates)
			hold, later := Holders(in, tt.registered, fire, lead)
			if !slices.Equal(hold, tt.wantHold) || !slices.Equal(later, tt.wantLt) {
				t.Fatalf("Holders = %v, %v; want %v, %v", hold, later, tt.wantHold, tt.wantLt)
			}
			if !slices.Equal(in, tt.candidates) {
				t.Fatal("Holders changed its input")
			}
			if got := RecheckAt(later, tt.registered, fire, 30*time.Second); !got.Equal(tt.wantRecheck) {
				t.Fatalf("RecheckAt = %v, want %v", got, tt.wantRecheck)
			}
		})
	}
}

// Holders keeps every candidate exactly once, gives a fire at least one holder, keeps only instances registered
// by the cutoff unless none was, and RecheckAt comes after every left-out instance's last possible held fire.
func FuzzHolders(f *testing.F) {
	f.Add(uint8(3), int64(-10_000), int64(5_000), int64(2_000), int64(1_000), int64(30_000))
	f.Add(uint8(2), int64(0), int64(0), int64(-3_000), int64(0), int64(1))
	f.Add(uint8(1), int64(5_000), int64(0), int64(0), int64(1_000), int64(30_000))
	f.Fuzz(func(t *testing.T, n uint8, r0, r1, r2, leadMs, waitMs int64) {
		fire := time.Date(2026, 11, 25, 3, 0, 0, 0, time.UTC)
		lead, wait := time.Duration(leadMs%60_000)*time.Millisecond, time.Duration(waitMs%120_000)*time.Millisecond
		offsets := []int64{r0, r1, r2}
		var candidates []Instance
		registered := map[string]time.Time{}
		for i := range int(n % 6) {
			in := Instance{ID: string(rune('a'+i)) + "@-@1", ServerIP: "10.0.0.1"}
			candidates = append(candidates, in)
			if i < len(offsets) { // the others' registration is unknown
				registered[in.ID] = fire.Add(time.Duration(offsets[i]%3_600_000) * time.Millisecond)
			}
		}
		hold, later := Holders(candidates, registered, fire, lead)
		if len(candidates) > 0 && len(hold) == 0 {
			t.Fatal("a fire with candidates got no holder")
		}
		if got := slices.Concat(hold, later); len(got) != len(candidates) {
			t.Fatalf("hold %v + later %v, candidates %v", hold, later, candidates)
		}
		for _, in := range candidates {
			if slices.Contains(hold, in) == slices.Contains(later, in) {
				t.Fatalf("%s in hold and later, or in neither", in.ID)
			}
		}
		cutoff := fire.Add(-lead - HoldMargin)
		if len(later) > 0 {
			for _, in := range hold {
				if at, ok := registered[in.ID]; !ok || at.After(cutoff) {
					t.Fatalf("%s holds, registered %v after the cutoff %v", in.ID, at, cutoff)
				}
			}
		}
		due := RecheckAt(later, registered, fire, wait)
		for _, in := range later {
			at, ok := registered[in.ID]
			if !ok {
				at = fire
			}
			if due.Before(at.Add(HoldMargin + wait)) {
				t.Fatalf("recheck at %v, before %s's last held fire could end (%v)", due, in.ID, at.Add(HoldMargin+wait))
			}
		}
	})
}
