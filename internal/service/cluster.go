package service

import (
	"context"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/calendar"
	"github.com/ejserver/ejserver/internal/cluster"
	"github.com/ejserver/ejserver/internal/cronexpr"
	"github.com/ejserver/ejserver/internal/history"
)

// ServerView is one server IP across the namespace (ElasticJob's server dimension).
type ServerView struct {
	IP        string   `json:"ip"`
	Instances []string `json:"instances"`
	// JobCount is the number of jobs with a servers/{ip} node for this IP.
	JobCount     int      `json:"jobCount"`
	DisabledJobs []string `json:"disabledJobs"`
	Online       bool     `json:"online"`
}

// InstanceView is one ejserver peer.
type InstanceView struct {
	cluster.Identity
	// JobCount counts the jobs this instance is registered on; LeaderOf those it leads.
	JobCount int `json:"jobCount"`
	LeaderOf int `json:"leaderOf"`
	// ItemsOwned counts the shard items (of every job) whose sharding/{i}/instance is this instance.
	ItemsOwned int `json:"itemsOwned"`
	// Self marks the peer answering this request.
	Self bool `json:"self"`
}

// Servers lists the server IPs found in any job, with their instances and disabled jobs.
func (s *Service) Servers(ctx context.Context) ([]ServerView, error) {
	byIP := map[string]*ServerView{}
	get := func(ip string) *ServerView {
		v := byIP[ip]
		if v == nil {
			v = &ServerView{IP: ip, Instances: []string{}, DisabledJobs: []string{}}
			byIP[ip] = v
		}
		return v
	}
	for _, name := range s.reg.Jobs() {
		snap := s.reg.Job(name)
		if snap == nil {
			continue
		}
		for ip, state := range snap.Servers {
			v := get(ip)
			v.JobCount++
			if state == cluster.ServerDisabled {
				v.DisabledJobs = append(v.DisabledJobs, name)
			}
		}
		for id, ip := range snap.Instances {
			v := get(ip)
			v.Online = true
			if !slices.Contains(v.Instances, id) {
				v.Instances = append(v.Instances, id)
			}
		}
	}
	peers, err := s.reg.Peers()
	if err != nil {
		return nil, err
	}
	for _, p := range peers {
		v := get(p.ServerIP)
		v.Online = true
		if !slices.Contains(v.Instances, p.InstanceID) {
			v.Instances = append(v.Instances, p.InstanceID)
		}
	}
	out := make([]ServerView, 0, len(byIP))
	for _, v := range byIP {
		slices.Sort(v.Instances)
		slices.Sort(v.DisabledJobs)
		out = append(out, *v)
	}
	slices.SortFunc(out, func(a, b ServerView) int { return compareIPs(a.IP, b.IP) })
	return out, nil
}

func compareIPs(a, b string) int {
	pa, ea := netip.ParseAddr(a)
	pb, eb := netip.ParseAddr(b)
	if ea == nil && eb == nil {
		return pa.Compare(pb)
	}
	if a < b {
		return -1
	}
	if a > b {
		return 1
	}
	return 0
}

// Instances lists the ejserver peers of the namespace.
func (s *Service) Instances(ctx context.Context) ([]InstanceView, error) {
	peers, err := s.reg.Peers()
	if err != nil {
		return nil, err
	}
	count := map[string]int{}
	leads := map[string]int{}
	owned := map[string]int{}
	for _, name := range s.reg.Jobs() {
		snap := s.reg.Job(name)
		if snap == nil {
			continue
		}
		for id := range snap.Instances {
			count[id]++
		}
		if snap.Leader != "" {
			leads[snap.Leader]++
		}
		for _, it := range snap.Items {
			if it.Exists && it.Owner != "" {
				owned[it.Owner]++
			}
		}
	}
	me := s.reg.Me().InstanceID
	out := make([]InstanceView, 0, len(peers))
	for _, p := range peers {
		out = append(out, InstanceView{Identity: p, JobCount: count[p.InstanceID], LeaderOf: leads[p.InstanceID], ItemsOwned: owned[p.InstanceID], Self: p.InstanceID == me})
	}
	return out, nil
}

// SetServerDisabled writes DISABLED or ENABLED to servers/{ip} of every job (ElasticJob's server disable).
// It returns how many jobs it changed.
func (s *Service) SetServerDisabled(ctx context.Context, ip string, disabled bool) (int, error) {
	if _, err := netip.ParseAddr(ip); err != nil {
		return 0, ejserver.Invalid("ip", "%q is not an IP address", ip)
	}
	state := cluster.ServerEnabled
	if disabled {
		state = cluster.ServerDisabled
	}
	jobs := s.reg.Jobs()
	var (
		mu       sync.Mutex
		firstErr error
		changed  int
		wg       sync.WaitGroup
		sem      = make(chan struct{}, 16)
	)
	for _, job := range jobs {
		snap := s.reg.Job(job)
		if snap == nil {
			continue
		}
		if _, known := snap.Servers[ip]; !known && disabled {
			continue // a job this server never ran: nothing to disable
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			err := s.reg.SetServerState(job, ip, state)
			mu.Lock()
			defer mu.Unlock()
			if err != nil && firstErr == nil && !ejserver.IsNotFound(err) {
				firstErr = err
			}
			if err == nil {
				changed++
			}
		}()
	}
	wg.Wait()
	s.log.Info("server state set", "ip", ip, "state", state, "jobs", changed)
	return changed, firstErr
}

// SetJobServerDisabled writes servers/{ip} of one job.
func (s *Service) SetJobServerDisabled(ctx context.Context, job, ip string, disabled bool) error {
	if _, err := netip.ParseAddr(ip); err != nil {
		return ejserver.Invalid("ip", "%q is not an IP address", ip)
	}
	if _, _, err := s.reg.GetJob(job); err != nil {
		return err
	}
	state := cluster.ServerEnabled
	if disabled {
		state = cluster.ServerDisabled
	}
	return s.reg.SetServerState(job, ip, state)
}

// MaxCronPreview bounds the fire times one preview returns.
const MaxCronPreview = 100

// CronQuery asks for the next fire times of an expression, optionally with a job's calendars applied.
type CronQuery struct {
	Expr     string
	TimeZone string
	From     time.Time // zero: now
	Count    int
	// ExcludeCalendars and IncludeCalendars name cluster calendars, as a job's fields do; an unknown one is
	// an EINVALID error naming the field and the calendar.
	ExcludeCalendars, IncludeCalendars []string
}

// CronNext returns the next Count fire times of the expression in its time zone after From, computed by the
// scheduler's own code, with the named calendars applied by the same rules a job's next fires use
// (JobNextFires). Errors name the field ("cron", "timeZone", "count", "excludeCalendars",
// "includeCalendars").
func (s *Service) CronNext(ctx context.Context, q CronQuery) ([]time.Time, string, error) {
	if q.Count < 1 || q.Count > MaxCronPreview {
		return nil, "", ejserver.Invalid("count", "must be between 1 and %d, got %d", MaxCronPreview, q.Count)
	}
	loc, err := cronexpr.LoadLocation(q.TimeZone)
	if err != nil {
		return nil, "", ejserver.Invalid("timeZone", "%v", err)
	}
	if q.Expr == "" {
		return nil, "", ejserver.Invalid("cron", "is required")
	}
	sched, err := cronexpr.Parse(q.Expr, loc)
	if err != nil {
		return nil, "", ejserver.Invalid("cron", "%v", err)
	}
	from := q.From
	if from.IsZero() {
		from = s.clk.Now()
	}
	r, err := s.previewRules(ctx, q.ExcludeCalendars, q.IncludeCalendars)
	if err != nil {
		return nil, "", err
	}
	out := calendar.Next(sched.Next, r, from, q.Count, -1)
	if out == nil {
		out = []time.Time{}
	}
	return out, s.describe(q.Expr), nil
}

func (s *Service) history() (history.Store, error) {
	if s.cfg.History == nil {
		return nil, ejserver.Errorf(ejserver.EUNAVAILABLE, "no execution history store is configured")
	}
	return s.cfg.History, nil
}

// Executions lists executions, newest first.
func (s *Service) Executions(ctx context.Context, f history.ExecutionFilter) (history.ExecutionPage, error) {
	h, err := s.history()
	if err != nil {
		return history.ExecutionPage{}, err
	}
	if f.JobName != "" {
		if err := ejserver.ValidateJobName(f.JobName); err != nil {
			return history.ExecutionPage{}, err
		}
	}
	return h.ListExecutions(ctx, f)
}

// Execution reads one execution.
func (s *Service) Execution(ctx context.Context, id string) (ejserver.Execution, error) {
	h, err := s.history()
	if err != nil {
		return ejserver.Execution{}, err
	}
	return h.GetExecution(ctx, id)
}

// Traces lists status traces.
func (s *Service) Traces(ctx context.Context, f history.TraceFilter) ([]ejserver.StatusTrace, error) {
	h, err := s.history()
	if err != nil {
		return nil, err
	}
	return h.ListTraces(ctx, f)
}
