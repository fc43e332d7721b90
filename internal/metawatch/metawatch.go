// Package metawatch keeps a cache of a cluster-wide meta folder (notification channels, calendars) in step
// with ZooKeeper: one goroutine reads the folder's nodes with watches, hands each read to the cache, and reads
// again when a watch fires; a failed read is logged and retried after a pause.
package metawatch

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/ejserver/ejserver/internal/clock"
	"github.com/ejserver/ejserver/internal/cluster"
)

// Config is a Loop's folder and cache.
type Config struct {
	What string // for the log: "calendars", "notification channels"
	// Read returns the folder's nodes, watched, and a channel closed when one of them changes.
	Read func(watch bool) ([]cluster.MetaNode, <-chan struct{}, error)
	// Apply replaces the cache with nodes (called on the loop's goroutine only).
	Apply      func(nodes []cluster.MetaNode)
	Clock      clock.Clock
	Logger     *slog.Logger
	RetryPause time.Duration // after a failed read (default 1s)
}

// Loop owns the watching goroutine: Start begins it, Stop ends it.
type Loop struct {
	cfg    Config
	loaded chan struct{}

	startOnce, stopOnce sync.Once
	stop                chan struct{}
	wg                  sync.WaitGroup
}

// New returns a loop; Start begins watching.
func New(cfg Config) *Loop {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.RetryPause <= 0 {
		cfg.RetryPause = time.Second
	}
	return &Loop{cfg: cfg, loaded: make(chan struct{}), stop: make(chan struct{})}
}

// Start begins watching; it returns after the first load, or when ctx ends (the loop goes on loading in the
// background).
func (l *Loop) Start(ctx context.Context) error {
	l.startOnce.Do(func() {
		l.wg.Add(1)
		go l.run()
	})
	select {
	case <-l.loaded:
	case <-ctx.Done():
	case <-l.stop:
	}
	return nil
}

// Stop ends the loop; safe twice and before Start.
func (l *Loop) Stop() {
	l.stopOnce.Do(func() { close(l.stop) })
	l.wg.Wait()
}

func (l *Loop) run() {
	defer l.wg.Done()
	first := true
	for {
		nodes, changed, err := l.cfg.Read(true)
		if err != nil {
			l.cfg.Logger.Warn("read "+l.cfg.What, "err", err)
			t := l.cfg.Clock.NewTimer(l.cfg.RetryPause)
			select {
			case <-l.stop:
				t.Stop()
				return
			case <-t.C():
			}
			continue
		}
		l.cfg.Apply(nodes)
		if first {
			close(l.loaded)
			first = false
		}
		select {
		case <-l.stop:
			return
		case <-changed:
		}
	}
}
