package webhook

import (
	"context"
	"sync"
	"sync/atomic"
)

// limiter bounds in-flight requests: globally per peer and, optionally, per job. A request takes its job's
// slot first, then a global one, so a job waiting on its own bound never holds global slots.
type limiter struct {
	global  chan struct{}
	waiting atomic.Int64 // requests waiting for a slot

	mu   sync.Mutex
	jobs map[string]*jobSlots // only jobs with a holder or waiter; removed when the last one leaves
}

type jobSlots struct {
	slots chan struct{}
	refs  int // holders and waiters
}

func newLimiter(n int) *limiter {
	return &limiter{global: make(chan struct{}, n), jobs: make(map[string]*jobSlots)}
}

// acquire takes a slot (job's bound if perJob > 0, then global). A free slot is taken at once; before it
// first has to wait, it calls onWait (jobBound: the wait is for a slot of the job's own bound), whose channel
// (nil: none) ends the wait when it closes, as ctx's end and halt's closing (nil: never) do. It returns the
// function that releases the slots, or the reason it gave up: ctx's error, errHalted or errStopWaiting.
func (l *limiter) acquire(ctx context.Context, halt <-chan struct{}, job string, perJob int, onWait func(jobBound bool) <-chan struct{}) (func(), error) {
	var stop <-chan struct{}
	waited := false
	defer func() {
		if waited {
			l.waiting.Add(-1)
		}
	}()
	take := func(slots chan struct{}, jobBound bool) error {
		select {
		case slots <- struct{}{}:
			return nil
		default:
		}
		if !waited {
			waited = true
			l.waiting.Add(1)
			stop = onWait(jobBound)
		}
		select {
		case slots <- struct{}{}:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		case <-halt:
			return errHalted
		case <-stop:
			return errStopWaiting
		}
	}
	var js *jobSlots
	if perJob > 0 {
		js = l.join(job, perJob)
		if err := take(js.slots, true); err != nil {
			l.leave(job, js)
			return nil, err
		}
	}
	if err := take(l.global, false); err != nil {
		l.releaseJob(job, js)
		return nil, err
	}
	return func() {
		<-l.global
		l.releaseJob(job, js)
	}, nil
}

func (l *limiter) releaseJob(job string, js *jobSlots) {
	if js == nil {
		return
	}
	<-js.slots
	l.leave(job, js)
}

// join registers a holder or waiter of job's slots. If the job's bound changed, new requests use a new set
// of slots; requests already holding the old set keep it until they finish.
func (l *limiter) join(job string, n int) *jobSlots {
	l.mu.Lock()
	defer l.mu.Unlock()
	js := l.jobs[job]
	if js == nil || cap(js.slots) != n {
		js = &jobSlots{slots: make(chan struct{}, n)}
		l.jobs[job] = js
	}
	js.refs++
	return js
}

func (l *limiter) leave(job string, js *jobSlots) {
	l.mu.Lock()
	defer l.mu.Unlock()
	js.refs--
	if js.refs == 0 && l.jobs[job] == js {
		delete(l.jobs, job)
	}
}
