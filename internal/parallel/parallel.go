// Package parallel runs independent calls on a bounded number of goroutines. The registry uses it for bulk
// ZooKeeper reads (go-zookeeper pipelines concurrent requests on its one connection, so n reads cost about
// n/workers round trips) and the coordination services for work spread over many jobs.
package parallel

import (
	"sync"
	"sync/atomic"
)

// For calls fn(0) ... fn(n-1) on up to workers goroutines and returns, once every started call has
// returned, the first error. After an error no new call starts.
func For(n, workers int, fn func(i int) error) error {
	if n <= 0 {
		return nil
	}
	if n == 1 || workers <= 1 {
		for i := range n {
			if err := fn(i); err != nil {
				return err
			}
		}
		return nil
	}
	var (
		wg     sync.WaitGroup
		next   atomic.Int64
		failed atomic.Bool
		mu     sync.Mutex
		first  error
	)
	for range min(n, workers) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !failed.Load() {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := fn(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
					failed.Store(true)
					return
				}
			}
		}()
	}
	wg.Wait()
	return first
}
