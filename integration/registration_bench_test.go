package integration

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/ejserver/ejserver/integration/harness"
)

// BenchmarkCreate1000Jobs registers 1,000 jobs through one peer's API (16 clients at once) and reports how
// long that took and the peer's RSS once every job is loaded and scheduled.
//
//	go test -run '^$' -bench Create1000Jobs -benchtime 1x ./integration/
func BenchmarkCreate1000Jobs(b *testing.B) {
	for range b.N {
		recv := newReceiver(b)
		c := newCluster(b, 1, withArgs("--log-level", "warn"))
		p := c.peers[0]
		const n, clients = 1000, 16
		start := time.Now()
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for w := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := w; i < n; i += clients {
					// every job fires once an hour at a spread-out minute: loaded and scheduled, not busy
					spec := job(fmt.Sprintf("job-%04d", i), fmt.Sprintf("0 %d * * * ?", i%60), 1, recv.URL)
					status, body, err := p.Do("POST", "/api/v1/jobs", spec, nil)
					if err != nil || status != http.StatusCreated {
						errs <- fmt.Errorf("create %d: %d %v %s", i, status, err, body)
						return
					}
				}
			}()
		}
		wg.Wait()
		created := time.Since(start)
		close(errs)
		for err := range errs {
			b.Fatal(err)
		}
		// every job loaded by the peer: the list shows them all
		var page struct {
			Total int `json:"total"`
		}
		for deadline := time.Now().Add(time.Minute); ; {
			if _, _, err := p.Do("GET", "/api/v1/jobs?limit=1", nil, &page); err == nil && page.Total == n {
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("only %d jobs loaded", page.Total)
			}
		}
		loaded := time.Since(start)
		rss, err := harness.RSS(p.PID())
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(created.Milliseconds()), "ms/1000-creates")
		b.ReportMetric(float64(loaded.Milliseconds()), "ms/1000-loaded")
		b.ReportMetric(float64(rss)/(1<<20), "MiB-RSS")
	}
}
