package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/ejserver/ejserver/internal/cluster"
)

// leaveWait bounds how long a stopping peer waits to see its peer node go (Registry.Leave) before it stops
// firing all the same.
const leaveWait = 2 * time.Second

// withdrawWait bounds how long a stopping peer deletes its job nodes itself (Registry.Withdraw); what is left
// goes with the session's close, in one transaction during which ZooKeeper answers nobody. 100,000 jobs are
// ~133,000 nodes: 10 s withdrew 104,000-111,000 of them on a quiet 2-core host and 71,000-103,000 with
// PostgreSQL on the same cores; with this bound three such stops withdrew them all in ~5.5-16 s
// (docs/benchmarks.md, "A withdrawal that finishes"). The deploy files' stop timeouts count it
// (deploy/main_test.go's drainMargin).
const withdrawWait = 30 * time.Second

// withdraw hands this peer's jobs over before its session closes: it deletes its leader and instance nodes in
// paced multis, so the others elect and reshard as they go and ZooKeeper answers them throughout.
func withdraw(reg *cluster.Registry, log *slog.Logger) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), withdrawWait)
	defer cancel()
	w, err := reg.Withdraw(ctx)
	attrs := []any{"jobs", w.Jobs, "deleted", w.Deleted, "multis", w.Multis, "refused", w.Refused,
		"took", time.Since(start).Round(time.Millisecond)}
	if err != nil {
		log.Warn("withdrew part of this peer's job nodes; the rest go with its session", append(attrs, "left", w.Left, "err", err)...)
		return
	}
	log.Info("withdrew this peer's job nodes", attrs...)
}
