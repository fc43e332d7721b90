package history

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ejserver/ejserver"
)

// accepted returns e's running record as an accepted item whose receiver's heartbeat came at hb (zero: none
// yet), with progress p.
func accepted(e ejserver.Execution, hb time.Time, p int) ejserver.Execution {
	e = running(e)
	e.Async, e.State, e.StatusCode, e.Attempts = true, "RUNNING", 202, 1
	e.Progress, e.Message = ptr(p), fmt.Sprintf("%d%% of rows", p)
	e.HeartbeatAt = hb
	e.LeaseExpiresAt = e.StartedAt.Add(time.Minute)
	if !hb.IsZero() {
		e.LeaseExpiresAt = hb.Add(time.Minute)
	}
	return e
}

// completed returns e's end record as an accepted item that succeeded at end, after its last heartbeat hb.
func completed(e ejserver.Execution, hb, end time.Time) ejserver.Execution {
	e = accepted(e, hb, 100)
	e.State, e.Success, e.CompletedAt, e.Message, e.Output = "SUCCEEDED", true, end, "done", "42 rows settled"
	e.DurationMs = end.Sub(e.StartedAt).Milliseconds()
	return e
}

func TestAsyncRoundTrip(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, s Store) {
		hb := accepted(newExec("settle", 2, t0), t0.Add(1234567*time.Nanosecond), 0) // progress 0 is not "none"
		end := completed(newExec("settle", 3, t0), t0.Add(time.Second), t0.Add(2*time.Second))
		end.Progress = nil
		mustWrite(t, s, hb, end)
		for _, e := range []ejserver.Execution{hb, end} {
			if got, want := mustGet(t, s, e.ID), sanitizeExecution(e); !reflect.DeepEqual(got, want) {
				t.Errorf("read back\n got %+v\nwant %+v", got, want)
			}
		}
		if got := mustGet(t, s, hb.ID); got.Progress == nil || *got.Progress != 0 || got.HeartbeatAt.Nanosecond() != 1234000 {
			t.Errorf("progress %v, heartbeat %s: want 0 and microsecond precision", got.Progress, got.HeartbeatAt)
		}
		if got := mustGet(t, s, end.ID); got.Progress != nil {
			t.Errorf("no progress read back as %d", *got.Progress)
		}
		// A synchronous item has none of the fields.
		plain := newExec("settle", 0, t0.Add(time.Second))
		mustWrite(t, s, plain)
		if got := mustGet(t, s, plain.ID); got.Async || got.State != "" || got.Progress != nil ||
			!got.HeartbeatAt.IsZero() || !got.LeaseExpiresAt.IsZero() || got.Message != "" || got.Output != "" {
			t.Errorf("a synchronous item read back with async fields: %+v", got)
		}
		last, err := s.LastExecutions(testCtx(t), []string{"settle"})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := last["settle"], sanitizeExecution(plain); !reflect.DeepEqual(got, want) {
			t.Errorf("last execution\n got %+v\nwant %+v", got, want)
		}
		hb.StartedAt = t0.Add(time.Hour) // the same heartbeat again: it replaces the row
		mustWrite(t, s, hb)
		last, err = s.LastExecutions(testCtx(t), []string{"settle"})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := last["settle"], sanitizeExecution(hb); !reflect.DeepEqual(got, want) {
			t.Errorf("last execution\n got %+v\nwant %+v", got, want)
		}
	})
}

func TestAsyncStringsSanitizedAndBounded(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, s Store) {
		e := completed(newExec("settle", 0, t0), t0, t0.Add(time.Second))
		e.Message = "a\x00b\xffc"
		e.Output = "out \xc3"
		e.State = "SUCCEEDED\x00"
		long := completed(newExec("settle", 1, t0), t0, t0.Add(time.Second))
		long.Message = strings.Repeat("é", maxMessageLen+10) // two bytes a character
		long.Output = strings.Repeat("x", maxOutputLen-1) + "€€"
		mustWrite(t, s, e, long)
		got := mustGet(t, s, e.ID)
		if got.Message != "a\uFFFDb\uFFFDc" || got.Output != "out \uFFFD" || got.State != "SUCCEEDED\uFFFD" {
			t.Errorf("got message %q output %q state %q", got.Message, got.Output, got.State)
		}
		got = mustGet(t, s, long.ID)
		if want := strings.Repeat("é", maxMessageLen); got.Message != want {
			t.Errorf("message of %d characters, want the first %d", len([]rune(got.Message)), maxMessageLen)
		}
		if want := strings.Repeat("x", maxOutputLen-1) + "€"; got.Output != want {
			t.Errorf("output of %d characters ending %q, want the first %d", len([]rune(got.Output)), got.Output[len(got.Output)-4:], maxOutputLen)
		}
	})
}

func TestTruncate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		s    string
		n    int
		want string
	}{
		{"", 3, ""},
		{"abc", 3, "abc"},
		{"abcd", 3, "abc"},
		{"ééé", 3, "ééé"},
		{"éééé", 3, "ééé"},
		{"a€b", 2, "a€"},
		{"abc", 0, ""},
	}
	for _, tt := range tests {
		if got := truncate(tt.s, tt.n); got != tt.want {
			t.Errorf("truncate(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.want)
		}
	}
}

func TestListExecutionsAsyncFilters(t *testing.T) {
	t.Parallel()
	a0 := newExec("a", 0, t0)
	aRun := running(newExec("a", 1, t0.Add(time.Second)))
	aHB := accepted(newExec("a", 2, t0.Add(2*time.Second)), t0.Add(3*time.Second), 50)
	aRetry := accepted(newExec("a", 3, t0.Add(3*time.Second)), t0.Add(4*time.Second), 10)
	aRetry.State = "RETRYING"
	aDone := completed(newExec("a", 0, t0.Add(4*time.Second)), t0, t0.Add(5*time.Second))
	bHB := accepted(newExec("b", 0, t0.Add(5*time.Second)), t0.Add(6*time.Second), 70)
	tests := []struct {
		name string
		f    ExecutionFilter
		want []ejserver.Execution // newest first
	}{
		{"running", ExecutionFilter{Running: true}, []ejserver.Execution{bHB, aRetry, aHB, aRun}},
		{"running of a job", ExecutionFilter{JobName: "a", Running: true}, []ejserver.Execution{aRetry, aHB, aRun}},
		{"state", ExecutionFilter{State: "RUNNING"}, []ejserver.Execution{bHB, aHB}},
		{"state of a job", ExecutionFilter{JobName: "a", State: "RUNNING"}, []ejserver.Execution{aHB}},
		{"retrying", ExecutionFilter{State: "RETRYING", Running: true}, []ejserver.Execution{aRetry}},
		{"succeeded", ExecutionFilter{State: "SUCCEEDED"}, []ejserver.Execution{aDone}},
		{"a state nothing is in", ExecutionFilter{State: "EXPIRED"}, nil},
		{"running and success match nothing", ExecutionFilter{Running: true, Success: ptr(true)}, nil},
	}
	eachStore(t, func(t *testing.T, s Store) {
		mustWrite(t, s, a0, aRun, aHB, aRetry, aDone, bHB)
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				p, err := s.ListExecutions(testCtx(t), tt.f)
				if err != nil {
					t.Fatal(err)
				}
				if got, want := ids(p.Items), ids(tt.want); !slices.Equal(got, want) {
					t.Fatalf("got %v\nwant %v", got, want)
				}
				for i, got := range p.Items {
					if want := sanitizeExecution(tt.want[i]); !reflect.DeepEqual(got, want) {
						t.Errorf("item %d\n got %+v\nwant %+v", i, got, want)
					}
				}
			})
		}
	})
}
