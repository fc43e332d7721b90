package client

import (
	"context"
	"net/http"
	"net/url"
	"time"
)

// StatsQuery is a stats window: Window long (0: the server's default, 24h for a job, 1h for the cluster),
// ending at To (zero: the end of the current bucket), in buckets of Bucket (0: 5m for a job, 1m for the
// cluster).
type StatsQuery struct {
	Window time.Duration
	Bucket time.Duration
	To     time.Time
}

func (s StatsQuery) values() url.Values {
	q := url.Values{}
	if s.Window > 0 {
		q.Set("window", s.Window.String())
	}
	if s.Bucket > 0 {
		q.Set("bucket", s.Bucket.String())
	}
	if !s.To.IsZero() {
		q.Set("to", s.To.Format(time.RFC3339Nano))
	}
	return q
}

// Aggregate counts a bucket's, a window's or a peer's executions. Times are milliseconds, nil without
// values; lateness is an item's start minus its fire's scheduled time. Percentiles are nearest-rank, in the
// window's total and per peer only (nil per bucket): exact under 1 s, at most 1% low above.
type Aggregate struct {
	Fires       int64  `json:"fires"`
	Items       int64  `json:"items"`
	Success     int64  `json:"success"`
	Failure     int64  `json:"failure"`
	Running     int64  `json:"running"`
	Misfire     int64  `json:"misfire"`
	Failover    int64  `json:"failover"`
	Manual      int64  `json:"manual"`
	DurationAvg *int64 `json:"durationAvgMs"`
	DurationMax *int64 `json:"durationMaxMs"`
	LatenessAvg *int64 `json:"latenessAvgMs"`
	LatenessMax *int64 `json:"latenessMaxMs"`
	DurationP50 *int64 `json:"durationP50Ms"`
	DurationP99 *int64 `json:"durationP99Ms"`
	LatenessP50 *int64 `json:"latenessP50Ms"`
	LatenessP99 *int64 `json:"latenessP99Ms"`
}

// StatsBucket is the aggregate of the executions that started in [Start, Start+bucket).
type StatsBucket struct {
	Start time.Time `json:"start"`
	Aggregate
}

// JobWindowStats is a job's window per bucket and in total. SharedHistory is false when the server's history is
// its own peer's alone (SQLite).
type JobWindowStats struct {
	Job           string        `json:"job"`
	From          time.Time     `json:"from"`
	To            time.Time     `json:"to"`
	Bucket        string        `json:"bucket"`
	Total         Aggregate     `json:"total"`
	Buckets       []StatsBucket `json:"buckets"`
	SharedHistory bool          `json:"sharedHistory"`
}

// Point is one execution as the job chart draws it.
type Point struct {
	ID           string    `json:"id"`
	StartedAt    time.Time `json:"startedAt"`
	ScheduledAt  time.Time `json:"scheduledAt"`
	DurationMs   int64     `json:"durationMs"`
	LatenessMs   int64     `json:"latenessMs"`
	Done         bool      `json:"done"`
	Success      bool      `json:"success"`
	Source       string    `json:"source"`
	ShardingItem int       `json:"shardingItem"`
	InstanceID   string    `json:"instanceId"`
}

// JobPoints is a job's executions in the window, oldest first (at most 20,000: Truncated says there were more).
type JobPoints struct {
	Job           string  `json:"job"`
	Points        []Point `json:"points"`
	Truncated     bool    `json:"truncated"`
	SharedHistory bool    `json:"sharedHistory"`
}

// PeerStats is what one peer executed in the window.
type PeerStats struct {
	InstanceID string `json:"instanceId"`
	Hostname   string `json:"hostname"`
	IP         string `json:"ip"`
	Aggregate
}

// ClusterStats is every job's window (the token's jobs'), per bucket and per peer.
type ClusterStats struct {
	From          time.Time     `json:"from"`
	To            time.Time     `json:"to"`
	Bucket        string        `json:"bucket"`
	Total         Aggregate     `json:"total"`
	Buckets       []StatsBucket `json:"buckets"`
	Peers         []PeerStats   `json:"peers"`
	SharedHistory bool          `json:"sharedHistory"`
}

// LoadAhead is the items on each second of the horizon from the enabled jobs' schedules.
type LoadAhead struct {
	From      time.Time `json:"from"`
	Items     []int64   `json:"items"`
	Jobs      int       `json:"jobs"`
	Schedules int       `json:"schedules"`
	Invalid   int       `json:"invalid"`
	Skipped   int       `json:"skipped"`
	Partial   bool      `json:"partial"`
	Peak      int64     `json:"peak"`
	PeakAt    time.Time `json:"peakAt"`
}

// JobStats aggregates a job's executions in a window.
func (c *Client) JobStats(ctx context.Context, name string, s StatsQuery) (*JobWindowStats, error) {
	var out JobWindowStats
	if _, err := c.do(ctx, request{method: http.MethodGet, path: jobPath(name, "stats"), query: s.values(), out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}

// JobPoints returns a job's executions in a window as chart points (s.Bucket is ignored).
func (c *Client) JobPoints(ctx context.Context, name string, s StatsQuery) (*JobPoints, error) {
	s.Bucket = 0
	var out JobPoints
	if _, err := c.do(ctx, request{method: http.MethodGet, path: jobPath(name, "points"), query: s.values(), out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}

// ClusterStats aggregates every job's executions in a window, per bucket and per peer.
func (c *Client) ClusterStats(ctx context.Context, s StatsQuery) (*ClusterStats, error) {
	var out ClusterStats
	if _, err := c.do(ctx, request{method: http.MethodGet, path: "/api/v1/stats", query: s.values(), out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}

// LoadAhead counts the items on each second of the next horizon (0: one hour).
func (c *Client) LoadAhead(ctx context.Context, horizon time.Duration) (*LoadAhead, error) {
	q := url.Values{}
	if horizon > 0 {
		q.Set("horizon", horizon.String())
	}
	var out LoadAhead
	if _, err := c.do(ctx, request{method: http.MethodGet, path: "/api/v1/schedule/load", query: q, out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}
