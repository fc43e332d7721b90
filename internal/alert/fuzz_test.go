package alert

import (
	"fmt"
	"testing"
	"time"

	"github.com/ejserver/ejserver/internal/notify"
)

// FuzzDecide drives a job through a random sequence of events and ticks and checks the properties of the
// notifications: at most one final notification per (rule, fire, kind); every recovery follows a trigger of
// the same DedupKey that no recovery closed yet; at most notify.MaxSamples samples.
func FuzzDecide(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7}, uint8(3), uint8(2))
	f.Add([]byte{1, 1, 1, 0, 0, 9, 9, 1, 0}, uint8(0), uint8(1))
	f.Add([]byte{2, 3, 2, 3, 0, 8, 1}, uint8(5), uint8(0))
	f.Fuzz(func(t *testing.T, script []byte, quietMin, inARow uint8) {
		kindsAll := append([]notify.Kind(nil), notify.Kinds...)
		p := Policy{Namespace: "ns", Job: "j", FailedFiresInARow: int(inARow % 5)}
		for i := range 3 {
			var on []notify.Kind
			for j, k := range kindsAll {
				if (int(quietMin)+i*7+j)%3 == 0 {
					on = append(on, k)
				}
			}
			on = append(on, notify.KindRecovered)
			p.Rules = append(p.Rules, Rule{Name: fmt.Sprint("r", i), On: on, Channels: []string{"c"},
				Quiet: time.Duration(int(quietMin)%4*i) * time.Minute})
		}
		var s State
		now := t0
		fire := 0
		type key struct{ rule, fire, kind string }
		seen := map[key]bool{}
		open := map[string]bool{}
		check := func(out []Outgoing) {
			for _, o := range out {
				n := o.Notification
				if len(n.Samples) > notify.MaxSamples {
					t.Fatalf("%d samples", len(n.Samples))
				}
				if n.Resolve {
					if !open[n.DedupKey] {
						t.Fatalf("recovery %s without an open trigger", n.DedupKey)
					}
					open[n.DedupKey] = false
					continue
				}
				if Opens(n.Kind) {
					open[n.DedupKey] = true
				}
				if !n.Partial && n.Folded == 0 && n.ScheduledAt.Equal(now) {
					k := key{n.Rule, fmt.Sprint(fire), string(n.Kind)}
					if seen[k] && n.Kind != notify.KindMisfire && n.Kind != notify.KindFailover && n.Kind != notify.KindLate {
						t.Fatalf("two %v", k)
					}
					seen[k] = true
				}
			}
		}
		for _, b := range script {
			now = now.Add(time.Duration(b%7) * 30 * time.Second)
			var out []Outgoing
			switch b % 5 {
			case 0, 1:
				fire++
				failedN := int(b/5) % 4
				e := Event{Type: FireEnded, Fire: fmt.Sprint(fire), ScheduledAt: now,
					Counts: notify.Counts{Items: 20, Failed: failedN, Succeeded: 20 - failedN}}
				for i := range failedN * 5 {
					e.Items = append(e.Items, notify.Sample{Item: i})
				}
				s, out = Decide(p, s, e, now)
			case 2:
				e := Event{Type: FirePartial, Fire: fmt.Sprint(fire + 1), Items: []notify.Sample{{Item: int(b) % 20}}}
				s, out = Decide(p, s, e, now)
			case 3:
				s, out = Decide(p, s, Event{Type: Single, Kind: kindsAll[int(b)%len(kindsAll)]}, now)
			case 4:
				s, out = Flush(p, s, now)
			}
			check(out)
		}
	})
}
