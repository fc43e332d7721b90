package dispatch

import (
	"testing"
	"time"
)

// BenchmarkFireNothingHere hands off scheduled fires of a job whose one item is another peer's, as two fires in
// three of a steady-10k peer are, and waits for them to be decided: the process's CPU per fire (cpu-ns/op),
// the goroutines they start included. The registry is the tests' fake (a snapshot read is a lock and a
// pointer, where a peer's may rebuild it), so the figure is what the executor adds to a fire.
func BenchmarkFireNothingHere(b *testing.B) {
	reg, send := newFakeRegistry(1), newFakeSender()
	reg.update(othersItem)
	e := newTestExecutor(reg, send)
	at := time.Unix(100, 0)
	cpu0 := cpuTime()
	for b.Loop() {
		at = at.Add(time.Second)
		e.Fire(Due{Job: "j", At: at})
	}
	e.Drain(time.Minute)
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
	if got := decidedAt(e); !got.Equal(at) {
		b.Fatalf("last fire decided %v, want %v", got, at)
	}
}
