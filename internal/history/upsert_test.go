package history

import (
	"errors"
	"math/rand/v2"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ejserver/ejserver"
)

func TestReplaces(t *testing.T) {
	t.Parallel()
	e := newExec("settle", 0, t0)
	t1, t2 := t0.Add(time.Second), t0.Add(2*time.Second)
	start := running(e) // no heartbeat: a synchronous item, or an accepted one before its first heartbeat
	end := e
	laterEnd := failed(e, 500)
	laterEnd.CompletedAt = e.CompletedAt.Add(time.Second)
	hb1, hb2 := accepted(e, t1, 10), accepted(e, t2, 20)
	asyncEnd := completed(e, t1, t2)
	tests := []struct {
		name   string
		n, old ejserver.Execution
		want   bool
	}{
		// Synchronous items, as before accepted items existed.
		{"running replaces running", start, start, true},
		{"end replaces running", end, start, true},
		{"running never replaces end", start, end, false},
		{"later end replaces end", laterEnd, end, true},
		{"same end replaces end", end, end, true},
		{"earlier end never replaces end", end, laterEnd, false},
		// Accepted items: running records progress by heartbeat.
		{"newer heartbeat replaces older", hb2, hb1, true},
		{"older heartbeat never replaces newer", hb1, hb2, false},
		{"same heartbeat replaces (the later write wins)", hb1, hb1, true},
		{"first heartbeat replaces the start record", hb1, start, true},
		{"start record never replaces a heartbeat", start, hb1, false},
		{"running never replaces end, whatever its heartbeat", accepted(e, t2.Add(time.Hour), 99), asyncEnd, false},
		{"end replaces running, whatever its heartbeat", end, accepted(e, t2.Add(time.Hour), 99), true},
		{"async end replaces running", asyncEnd, hb2, true},
		{"ends compare by completion, not heartbeat", completed(e, t2, t1), asyncEnd, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := replaces(tt.n, tt.old); got != tt.want {
				t.Fatalf("replaces = %v, want %v", got, tt.want)
			}
		})
	}
}

// progression is an accepted item's records, each after the one before in the upsert's order: whatever order
// they are written in, the last one must be what stays.
func progression(e ejserver.Execution) []ejserver.Execution {
	t1, t2, t3 := t0.Add(time.Second), t0.Add(2*time.Second), t0.Add(3*time.Second)
	laterEnd := completed(e, t3, t3.Add(2*time.Second))
	laterEnd.State, laterEnd.Success = "FAILED", false
	return []ejserver.Execution{running(e), accepted(e, t1, 10), accepted(e, t2, 20), accepted(e, t3, 30),
		completed(e, t3, t3.Add(time.Second)), laterEnd}
}

// permutations returns every order of 0..n-1.
func permutations(n int) [][]int {
	if n == 0 {
		return [][]int{{}}
	}
	var out [][]int
	for _, p := range permutations(n - 1) {
		for i := range n {
			q := slices.Insert(slices.Clone(p), i, n-1)
			out = append(out, q)
		}
	}
	return out
}

func TestMergeExecutionsKeepsTheLastInOrder(t *testing.T) {
	t.Parallel()
	recs := progression(newExec("settle", 0, t0))
	want := sanitizeExecution(recs[len(recs)-1])
	for _, p := range permutations(len(recs)) {
		batch := make([]ejserver.Execution, len(p))
		for i, k := range p {
			batch[i] = recs[k]
		}
		got := mergeExecutions(batch)
		if len(got) != 1 || !reflect.DeepEqual(got[0], want) {
			t.Fatalf("order %v: merged to %+v, want the last end record", p, got)
		}
	}
}

// TestAsyncUpsertOrder checks the stores' SQL (not the merge): each step is one WriteExecutions call.
func TestAsyncUpsertOrder(t *testing.T) {
	t.Parallel()
	e := newExec("settle", 0, t0)
	t1, t2 := t0.Add(time.Second), t0.Add(2*time.Second)
	hb1, hb2, end := accepted(e, t1, 10), accepted(e, t2, 20), completed(e, t2, t2.Add(time.Second))
	tests := []struct {
		name   string
		writes []ejserver.Execution // one call each
		want   ejserver.Execution
	}{
		{"heartbeats in order", []ejserver.Execution{running(e), hb1, hb2}, hb2},
		{"an older heartbeat after a newer one", []ejserver.Execution{hb1, hb2, hb1}, hb2},
		{"the start record after a heartbeat", []ejserver.Execution{hb1, running(e)}, hb1},
		{"the same heartbeat again", []ejserver.Execution{hb1, hb2, hb2}, hb2},
		{"end after heartbeats", []ejserver.Execution{hb1, hb2, hb1, end}, end},
		{"a heartbeat after the end", []ejserver.Execution{hb1, end, accepted(e, t2.Add(time.Hour), 99)}, end},
		{"the end before any heartbeat", []ejserver.Execution{end, hb2, hb1, running(e)}, end},
	}
	eachStore(t, func(t *testing.T, s Store) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				id := ejserver.NewExecutionID()
				for _, r := range tt.writes {
					r.ID = id
					mustWrite(t, s, r)
				}
				want := sanitizeExecution(tt.want)
				want.ID = id
				if got := mustGet(t, s, id); !reflect.DeepEqual(got, want) {
					t.Fatalf("\n got %+v\nwant %+v", got, want)
				}
			})
		}

		// Every order of an item's records, one execution per order: step i writes each order's i-th record
		// (distinct ids in one call, so the merge leaves them all to the SQL).
		recs := progression(e)
		perms := permutations(len(recs))
		idOf := make([]string, len(perms))
		for k := range perms {
			idOf[k] = ejserver.NewExecutionID()
		}
		for step := range recs {
			batch := make([]ejserver.Execution, len(perms))
			for k, p := range perms {
				batch[k] = recs[p[step]]
				batch[k].ID = idOf[k]
			}
			mustWrite(t, s, batch...)
		}
		want := sanitizeExecution(recs[len(recs)-1])
		for k, p := range perms {
			want.ID = idOf[k]
			if got := mustGet(t, s, idOf[k]); !reflect.DeepEqual(got, want) {
				t.Fatalf("order %v: got %+v, want the last end record", p, got)
			}
		}
	})
}

// TestHeartbeatsAtTwoPeers writes one item's heartbeats through two stores on one database (two peers that
// took callbacks), concurrently and each in its own shuffled order: the newest heartbeat stays, then the end,
// which no heartbeat written after it displaces.
func TestHeartbeatsAtTwoPeers(t *testing.T) {
	t.Parallel()
	for _, kind := range storeKinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			dsn := newDSN(t, kind)
			peers := []Store{openDSN(t, dsn), openDSN(t, dsn)}
			e := newExec("settle", 0, t0)
			const n = 40
			var hbs []ejserver.Execution
			for i := range n {
				hbs = append(hbs, accepted(e, t0.Add(time.Duration(i+1)*time.Second), i))
			}
			ctx := testCtx(t)
			write := func(recs []ejserver.Execution) error {
				var wg sync.WaitGroup
				errs := make([]error, len(peers))
				for p, s := range peers {
					order := slices.Clone(recs)
					rand.New(rand.NewPCG(uint64(p), 16)).Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
					wg.Go(func() {
						for _, r := range order {
							if err := s.WriteExecutions(ctx, []ejserver.Execution{r}); err != nil {
								errs[p] = err
								return
							}
						}
					})
				}
				wg.Wait()
				return errors.Join(errs...)
			}
			if err := write(hbs); err != nil {
				t.Fatal(err)
			}
			mustWrite(t, peers[1], hbs[0]) // whichever peer wrote last, the oldest heartbeat comes last of all
			if got, want := mustGet(t, peers[0], e.ID), sanitizeExecution(hbs[n-1]); !reflect.DeepEqual(got, want) {
				t.Fatalf("after the heartbeats\n got %+v\nwant %+v", got, want)
			}
			end := completed(e, hbs[n-1].HeartbeatAt, hbs[n-1].HeartbeatAt.Add(time.Second))
			if err := write(slices.Concat(hbs[n/2:], []ejserver.Execution{end})); err != nil {
				t.Fatal(err)
			}
			for i, s := range peers {
				if got, want := mustGet(t, s, e.ID), sanitizeExecution(end); !reflect.DeepEqual(got, want) {
					t.Fatalf("peer %d after the end\n got %+v\nwant %+v", i, got, want)
				}
			}
		})
	}
}
