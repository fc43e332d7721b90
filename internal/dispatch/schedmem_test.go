package dispatch

import (
	"fmt"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/ejserver/ejserver/internal/clock"
	"github.com/ejserver/ejserver/internal/cronexpr"
	"github.com/ejserver/ejserver/internal/testutil"
)

// BenchmarkSchedulerMemory measures what the scheduler holds per job at 10,000 and 100,000 jobs (issue 21,
// part mm): the live heap after a GC, in bytes per job, for the harness's steady-N jobs (one of 60 crons,
// each parsed once and shared, as the peer's scheduleOn does).
//
//	go test -run '^$' -bench BenchmarkSchedulerMemory -benchtime 1x ./internal/dispatch/
func BenchmarkSchedulerMemory(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			names := make([]string, n)
			for k := range n {
				names[k] = fmt.Sprintf("steady-%06d", k)
			}
			scheds := make([]Schedule, 60)
			for s := range scheds {
				sched, err := cronexpr.ParseShared(fmt.Sprintf("%d * * * * ?", s), time.UTC)
				if err != nil {
					b.Fatal(err)
				}
				scheds[s] = sched
			}
			for range b.N {
				before := testutil.LiveHeap()
				s := NewScheduler(clock.NewFake(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)), nil, func(Due) {})
				for k, name := range names {
					s.Set(name, scheds[k%60])
				}
				after := testutil.LiveHeap()
				b.ReportMetric(float64(after-before)/float64(n), "B/job")
				runtime.KeepAlive(s)
			}
		})
	}
}

// BenchmarkSchedulerFires measures the scheduler's own work per fire (takeDue: finding the due jobs and moving
// each on to its next fire) for the harness's steady-N jobs, one of 60 crons each, over simulated minutes: at
// 100,000 jobs 1,667 jobs are due each second.
//
//	go test -run '^$' -bench BenchmarkSchedulerFires ./internal/dispatch/
func BenchmarkSchedulerFires(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			start := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
			s := NewScheduler(clock.NewFake(start), nil, func(Due) {})
			s.SetMaxLead(time.Second)
			for k := range n {
				sched, err := cronexpr.ParseShared(fmt.Sprintf("%d * * * * ?", k%60), time.UTC)
				if err != nil {
					b.Fatal(err)
				}
				s.Set(fmt.Sprintf("steady-%06d", k), sched)
			}
			fires, now := 0, start
			b.ResetTimer()
			for fires < b.N {
				now = now.Add(time.Second)
				due, _ := s.takeDue(now)
				fires += len(due)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(fires), "ns/fire")
		})
	}
}
