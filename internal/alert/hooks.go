package alert

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/clock"
	"github.com/ejserver/ejserver/internal/webhook"
)

// HookRequest is one once-per-fire hook call.
type HookRequest struct {
	URL string
	// Webhook is the job's webhook config: its secrets sign the hook like an item request.
	Webhook ejserver.Webhook
	Job     string
	ID      string // webhook-id: the same for a hook's retries
	Body    []byte
}

// HookPosterConfig configures a HookPoster.
type HookPosterConfig struct {
	Client *http.Client // default: 10 s timeout
	Clock  clock.Clock
	Logger *slog.Logger
	// Queue bounds the hooks waiting to be sent (default 1024): past it, a hook is dropped and logged.
	Queue int
	// Workers send hooks concurrently (default 4); Attempts per hook (default 3) back off from Backoff (1 s).
	Workers  int
	Attempts int
	Backoff  time.Duration
	// Check, if set, vets a hook's URL before it is sent (the item webhooks' target policy).
	Check func(rawURL string) error
	// UserAgent of the requests (default "ejserver").
	UserAgent string
}

// HookPoster sends hooks from a bounded queue: a slow hook never holds the fire ledger or dispatch.
type HookPoster struct {
	cfg   HookPosterConfig
	queue chan HookRequest

	startOnce, stopOnce sync.Once
	stop                chan struct{}
	wg                  sync.WaitGroup
}

// NewHookPoster returns a poster; Start runs its workers.
func NewHookPoster(cfg HookPosterConfig) *HookPoster {
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: 10 * time.Second}
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Queue <= 0 {
		cfg.Queue = 1024
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 4
	}
	if cfg.Attempts <= 0 {
		cfg.Attempts = 3
	}
	if cfg.Backoff <= 0 {
		cfg.Backoff = time.Second
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = "ejserver"
	}
	return &HookPoster{cfg: cfg, queue: make(chan HookRequest, cfg.Queue), stop: make(chan struct{})}
}

// Start runs the workers.
func (h *HookPoster) Start() {
	h.startOnce.Do(func() {
		for range h.cfg.Workers {
			h.wg.Add(1)
			go h.work()
		}
	})
}

// Stop ends the workers (an attempt in flight is aborted); safe twice and before Start.
func (h *HookPoster) Stop() {
	h.stopOnce.Do(func() { close(h.stop) })
	h.startOnce.Do(func() {})
	h.wg.Wait()
}

// Post queues a hook without blocking; it reports false when the queue is full (the hook is dropped).
func (h *HookPoster) Post(r HookRequest) bool {
	select {
	case h.queue <- r:
		return true
	default:
		h.cfg.Logger.Warn("hook queue full: hook dropped", "job", r.Job, "id", r.ID)
		return false
	}
}

func (h *HookPoster) work() {
	defer h.wg.Done()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-h.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	for {
		select {
		case <-h.stop:
			return
		case r := <-h.queue:
			h.send(ctx, r)
		}
	}
}

func (h *HookPoster) send(ctx context.Context, r HookRequest) {
	if h.cfg.Check != nil {
		if err := h.cfg.Check(r.URL); err != nil {
			h.cfg.Logger.Warn("hook refused by the target policy", "job", r.Job, "err", err)
			return
		}
	}
	backoff := h.cfg.Backoff
	var cause string
	for attempt := 1; attempt <= h.cfg.Attempts; attempt++ {
		status, err := h.attempt(ctx, r)
		if err == nil && status >= 200 && status < 300 {
			h.cfg.Logger.Info("hook sent", "job", r.Job, "id", r.ID, "http_status", status, "attempts", attempt)
			return
		}
		cause = fmt.Sprintf("HTTP %d", status)
		if err != nil {
			cause = err.Error()
		}
		if status == http.StatusGone || attempt == h.cfg.Attempts || !clock.Sleep(h.cfg.Clock, backoff, h.stop) {
			break
		}
		backoff *= 2
	}
	h.cfg.Logger.Warn("hook failed", "job", r.Job, "id", r.ID, "cause", cause)
}

func (h *HookPoster) attempt(ctx context.Context, r HookRequest) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.URL, bytes.NewReader(r.Body))
	if err != nil {
		return 0, err
	}
	now := h.cfg.Clock.Now()
	ts := now.Unix()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", h.cfg.UserAgent)
	req.Header.Set(webhook.HeaderID, r.ID)
	req.Header.Set(webhook.HeaderTimestamp, strconv.FormatInt(ts, 10))
	if secrets := r.Webhook.Secrets(now); len(secrets) > 0 {
		sig, err := webhook.SignatureHeader(secrets, r.ID, ts, r.Body)
		if err != nil {
			return 0, fmt.Errorf("sign the hook: %w", err)
		}
		req.Header.Set(webhook.HeaderSignature, sig)
	}
	for k, v := range r.Webhook.Headers {
		if !webhook.ForbiddenHeader(k) {
			req.Header.Set(k, v)
		}
	}
	resp, err := h.cfg.Client.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
	return resp.StatusCode, nil
}

// hookID is a hook's webhook-id: stable for one fire's hook across retries and peers.
func hookID(job, fire, which string) string {
	sum := sha256.Sum256([]byte(job + "\x00" + fire + "\x00" + which))
	return "hook_" + which + "_" + hex.EncodeToString(sum[:12])
}
