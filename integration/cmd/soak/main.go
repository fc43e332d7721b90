// Command soak runs ejserver's nemesis soak (integration/soak): a 3-node ZooKeeper ensemble, several peers
// with PostgreSQL history, a mixed job set with recording receivers, and a seeded nemesis injecting
// overlapping faults; then the checker judges the whole run and prints its report. It exits 1 on any
// violation, printing the seed that replays the fault schedule and the directory that keeps the run's
// event log and the peers' logs.
//
//	go run ./integration/cmd/soak -duration 30m -seed 42     # make soak DURATION=30m SEED=42
//
// Only loopback is used. Every process is started by this program and stopped by its PID.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/ejserver/ejserver/integration/soak"
)

func main() { os.Exit(run()) }

func run() int {
	var cfg soak.Config
	fs := flag.NewFlagSet("soak", flag.ContinueOnError)
	fs.Uint64Var(&cfg.Seed, "seed", 0, "seed of the fault schedule (0: drawn from the clock and printed)")
	fs.DurationVar(&cfg.Duration, "duration", 5*time.Minute, "how long the nemesis injects faults (the run takes about 2 minutes more)")
	fs.IntVar(&cfg.Peers, "peers", 4, "ejserver peers (3-5)")
	fs.StringVar(&cfg.Dir, "dir", "", "run directory (default: a new temporary one; kept when the run fails)")
	fs.BoolVar(&cfg.Keep, "keep", false, "keep the run directory even when the run passes")
	fs.DurationVar(&cfg.SessionTimeout, "session-timeout", 4*time.Second, "the peers' --session-timeout")
	if err := fs.Parse(os.Args[1:]); err != nil {
		return 2
	}
	if cfg.Seed == 0 {
		cfg.Seed = uint64(time.Now().UnixNano() % 1_000_000_000)
	}
	cfg.Log = os.Stderr
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	load, _ := os.ReadFile("/proc/loadavg")
	fmt.Fprintf(os.Stderr, "soak: seed %d, %d peers, nemesis for %s; load average %s", cfg.Seed, cfg.Peers, cfg.Duration, load)
	res, err := soak.Run(ctx, cfg)
	if err != nil {
		fmt.Fprintf(os.Stderr, "soak: the run failed: %v\nreplay the fault schedule: make soak SEED=%d DURATION=%s\n", err, cfg.Seed, cfg.Duration)
		if res.Dir != "" {
			fmt.Fprintf(os.Stderr, "run directory kept: %s\n", res.Dir)
		}
		return 1
	}
	load, _ = os.ReadFile("/proc/loadavg")
	fmt.Printf("seed %d, %d peers, nemesis %s, %d actions; load average at the end %s", cfg.Seed, cfg.Peers, cfg.Duration, len(res.Plan), load)
	fmt.Print(res.Report.Text())
	if n := len(res.Report.Violations); n > 0 {
		fmt.Printf("FAIL: %d violations; replay the fault schedule: make soak SEED=%d DURATION=%s\nrun directory kept (events.jsonl, peer*/ejserver.log, report.txt): %s\n",
			n, cfg.Seed, cfg.Duration, res.Dir)
		return 1
	}
	fmt.Println("PASS: no violations")
	return 0
}
