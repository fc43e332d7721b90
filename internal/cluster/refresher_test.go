package cluster

import (
	"fmt"
	"log/slog"
	"reflect"
	"testing"

	"github.com/ejserver/ejserver/internal/clock"
)

// TestRefresherLetsAPeakGo: once a backlog larger than stateKeep is drained, the index is made anew (a Go map
// keeps its peak's buckets: a registration of 100,000 jobs left ~5 MB of idle index per 20,000 jobs), while a
// small one is kept.
func TestRefresherLetsAPeakGo(t *testing.T) {
	for _, tt := range []struct {
		keys    int
		renewed bool
	}{{stateKeep + 1, true}, {stateKeep / 2, false}} {
		t.Run(fmt.Sprint(tt.keys), func(t *testing.T) {
			stop := make(chan struct{})
			w := newRefresher(2, func(refreshKey) error { return nil }, slog.New(slog.DiscardHandler), clock.Real{}, stop)
			before := reflect.ValueOf(w.state).UnsafePointer()
			for i := range tt.keys {
				w.kick(refreshKey{kind: kindLoad, job: fmt.Sprintf("j%d", i)})
			}
			done := w.idleCh()
			w.start()
			<-done
			close(stop)
			w.wait()
			w.mu.Lock()
			defer w.mu.Unlock()
			if len(w.state) != 0 {
				t.Fatalf("%d keys left", len(w.state))
			}
			if renewed := reflect.ValueOf(w.state).UnsafePointer() != before; renewed != tt.renewed {
				t.Fatalf("index made anew: %v, want %v", renewed, tt.renewed)
			}
		})
	}
}
