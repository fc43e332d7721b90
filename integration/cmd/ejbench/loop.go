package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/ejserver/ejserver/receiver"
)

// The baseline: `ejbench loop` is a bare timer loop in a process of its own. It fires the workload's schedule
// (job k at the seconds s with s % period == spreadOffset(k, period), or every job at s % period == 0) by POSTing a webhook-like body per item straight to
// the receiver: no ZooKeeper, no ejserver, no history. What it achieves is this machine's limit at that moment,
// and every ejserver figure is compared with it.

type loopConfig struct {
	url      string
	prefix   string
	jobs     int
	items    int
	period   time.Duration
	spread   bool // job k fires at the seconds s with s % period == spreadOffset(k, period); else every job at s % period == 0
	start    time.Time
	duration time.Duration
	conc     int
}

// loopArgs are the command-line arguments of `ejbench loop` for c.
func loopArgs(c loopConfig) []string {
	return []string{"loop", "-url", c.url, "-prefix", c.prefix, "-jobs", fmt.Sprint(c.jobs), "-items", fmt.Sprint(c.items),
		"-period", c.period.String(), "-start", fmt.Sprint(c.start.UnixNano()), "-duration", c.duration.String(),
		"-conc", fmt.Sprint(c.conc), fmt.Sprintf("-spread=%t", c.spread)}
}

func runLoop(args []string) int {
	var c loopConfig
	fs := flag.NewFlagSet("ejbench loop", flag.ContinueOnError)
	fs.StringVar(&c.url, "url", "", "receiver URL")
	fs.StringVar(&c.prefix, "prefix", "b", "job name prefix")
	fs.IntVar(&c.jobs, "jobs", 1, "jobs")
	fs.IntVar(&c.items, "items", 1, "items per job")
	fs.DurationVar(&c.period, "period", 10*time.Second, "each job's period")
	start := fs.Int64("start", 0, "Unix ns of the first second to fire")
	fs.DurationVar(&c.duration, "duration", time.Minute, "how long to fire")
	fs.IntVar(&c.conc, "conc", 256, "requests in flight at most")
	fs.BoolVar(&c.spread, "spread", true, "spread the jobs over the period (job k at spreadOffset(k, period)); false: all at 0")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	c.start = time.Unix(0, *start)
	if err := bareLoop(c); err != nil {
		fmt.Fprintln(os.Stderr, "ejbench loop:", err)
		return 1
	}
	return 0
}

func bareLoop(c loopConfig) error {
	periodS := int64(c.period / time.Second)
	if periodS < 1 {
		return fmt.Errorf("period %s: at least 1s", c.period)
	}
	// jobs by their second within the period
	byOffset := make([][]int, periodS)
	sched := schedule{prefix: c.prefix, jobs: c.jobs, items: c.items, period: c.period, spread: c.spread}
	for k := range c.jobs {
		off := sched.offset(k)
		byOffset[off] = append(byOffset[off], k)
	}
	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 3 * time.Second}).DialContext,
		MaxIdleConns:        2 * c.conc,
		MaxIdleConnsPerHost: c.conc,
		MaxConnsPerHost:     c.conc,
		IdleConnTimeout:     90 * time.Second,
	}
	client := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	sem := make(chan struct{}, c.conc)
	var wg sync.WaitGroup
	var failMu sync.Mutex
	fails := 0
	instance := fmt.Sprintf("baseline@-@%d", os.Getpid())
	end := c.start.Add(c.duration)
	for at := c.start; at.Before(end); at = at.Add(time.Second) {
		if d := time.Until(at); d > 0 {
			time.Sleep(d)
		}
		for _, k := range byOffset[at.Unix()%periodS] {
			job := sched.jobName(k)
			for item := range c.items {
				wg.Add(1)
				go func() {
					defer wg.Done()
					sem <- struct{}{}
					defer func() { <-sem }()
					if err := post(client, c.url, receiver.Payload{JobName: job, TaskID: job + "@-@" + fmt.Sprint(item),
						ExecutionID: newID(), ShardingItem: item, ShardingTotalCount: c.items, Source: "NORMAL_TRIGGER",
						ScheduledAt: at.UTC(), Attempt: 1, InstanceID: instance}); err != nil {
						failMu.Lock()
						fails++
						failMu.Unlock()
					}
				}()
			}
		}
	}
	wg.Wait()
	if fails > 0 {
		fmt.Fprintf(os.Stderr, "ejbench loop: %d requests failed\n", fails)
	}
	return nil
}

func post(client *http.Client, url string, b receiver.Payload) error {
	data, err := json.Marshal(b)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, url, bytes.NewReader(data))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("webhook-id", b.ExecutionID)
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	return nil
}

func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
