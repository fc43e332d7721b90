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

// acquire waits for a slot (job's bound if perJob > 0, then global) until ctx ends or stop closes. It returns
// the function that releases the slots, or the reason it gave up: ctx's error, or errStopWaiting.
func (l *limiter) acquire(ctx context.Context, stop <-chan struct{}, job string, perJob int) (func(), error) {
	l.waiting.Add(1)
	defer l.waiting.Add(-1)
	var js *jobSlots
	if perJob > 0 {
		js = l.join(job, perJob)
		select {
		case js.slots <- struct{}{}:
		case <-ctx.Done():
			l.leave(job, js)
			return nil, ctx.Err()
		case <-stop:
			l.leave(job, js)
			return nil, errStopWaiting
		}
	}
	select {
	case l.global <- struct{}{}:
	case <-ctx.Done():
		l.releaseJob(job, js)
		return nil, ctx.Err()
	case <-stop:
		l.releaseJob(job, js)
		return nil, errStopWaiting
	}
	return l.releaser(job, js), nil
}

// tryAcquire takes the slots acquire would if they are free now, without waiting; ok false: it took none.
func (l *limiter) tryAcquire(job string, perJob int) (release func(), ok bool) {
	var js *jobSlots
	if perJob > 0 {
		js = l.join(job, perJob)
		select {
		case js.slots <- struct{}{}:
		default:
			l.leave(job, js)
			return nil, false
		}
	}
	select {
	case l.global <- struct{}{}:
	default:
		l.releaseJob(job, js)
		return nil, false
	}
	return l.releaser(job, js), true
}

// releaser returns the function that gives back a global slot and js's (if any).
func (l *limiter) releaser(job string, js *jobSlots) func() {
	return func() {
		<-l.global
		l.releaseJob(job, js)
	}
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
