// Package ratelog writes a warning that can repeat once per occurrence (per item, per event) at most once per
// interval, with how many occurrences it stands for. Under overload such a warning is the common case: at
// 100,000 jobs a peer whose history writer was saturated wrote one line per item (~300,000 lines, 82 MB in
// 27 minutes), costing CPU the items needed and burying every other line.
package ratelog

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/ejserver/ejserver/internal/clock"
)

// Warning is one warning message, written at most once per interval.
type Warning struct {
	log   *slog.Logger
	clk   clock.Clock
	msg   string
	every time.Duration

	mu      sync.Mutex
	last    time.Time // when the last line was written (zero: none yet)
	skipped int64     // occurrences since the last line that wrote none
}

// New returns a Warning that writes msg to log at most once per every (clk nil: the real clock).
func New(log *slog.Logger, clk clock.Clock, every time.Duration, msg string) *Warning {
	if clk == nil {
		clk = clock.Real{}
	}
	return &Warning{log: log, clk: clk, msg: msg, every: every}
}

// Warn counts one occurrence. The first writes its line at once; a later one writes its line only when every
// has passed since the last line, with "occurrences" the number of occurrences it stands for (itself and those
// not written since the last line). attrs are this occurrence's (job, item...): a sample of what happened.
// Occurrences not written yet are written by the next one after the interval.
func (w *Warning) Warn(attrs ...any) {
	now := w.clk.Now()
	w.mu.Lock()
	if !w.last.IsZero() && now.Sub(w.last) < w.every {
		w.skipped++
		w.mu.Unlock()
		return
	}
	n := w.skipped + 1
	w.last, w.skipped = now, 0
	w.mu.Unlock()
	if !w.log.Enabled(context.Background(), slog.LevelWarn) {
		return
	}
	w.log.Warn(w.msg, append(attrs, "occurrences", n)...)
}
