// Package service implements what users ask of ejserver (the REST API, the CLI through it, the console)
// over the registry, the scheduler and the history store. It holds the rules of each use case (validation,
// secrets, job status, what a trigger reaches) so that api/ only translates HTTP.
package service

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/clock"
	"github.com/ejserver/ejserver/internal/cluster"
	"github.com/ejserver/ejserver/internal/dispatch"
	"github.com/ejserver/ejserver/internal/history"
	"github.com/ejserver/ejserver/internal/lease"
)

// Registry is the part of cluster.Registry the service uses.
type Registry interface {
	Jobs() []string
	Job(name string) *cluster.JobSnapshot
	Me() cluster.Identity
	CreateJobSharded(cfg ejserver.JobConfig, owners []string) (int32, error)
	LivePeers() ([]cluster.Identity, bool)
	PeerLive(id string) bool
	GetJob(job string) (ejserver.JobConfig, int32, error)
	ReplaceJob(cfg ejserver.JobConfig, version int32) (int32, error)
	DeleteJob(job string) error
	SetServerState(job, ip, state string) error
	SetItemDisabled(job string, item int, disabled bool) error
	CreateTriggers(job string, instances []string, req cluster.TriggerRequest) error
	Dump(job string) ([]cluster.DumpLine, error)
	ItemDetails(job string, n int) ([]cluster.ItemDetail, error)
	Peers() ([]cluster.Identity, error)
	Reregister(job string)
	Lease() bool
	Wait(ctx context.Context, name string, cond func(*cluster.JobSnapshot) bool) (*cluster.JobSnapshot, error)
	ReadLease(executionID string) (lease.Lease, int32, error)
}

// Scheduler tells the next fire of a job.
type Scheduler interface {
	Next(job string) time.Time
}

// Runtime is this peer's executor, for its local view of a job.
type Runtime interface {
	Status(job string) dispatch.JobStatus
	Running(job string) []int
}

// TargetChecker refuses webhook URLs the operator did not allow (webhook.TargetPolicy satisfies it).
type TargetChecker interface {
	CheckURL(u string) error
}

// Config wires a Service.
type Config struct {
	Registry  Registry
	Scheduler Scheduler
	Runtime   Runtime
	// History may be nil (no store configured); History reads then return EUNAVAILABLE.
	History history.Store
	Targets TargetChecker
	// NewSecret generates a webhook secret.
	NewSecret func() string
	// DescribeCron puts a cron expression in words ("" when it can't); nil leaves descriptions out.
	DescribeCron func(expr string) string
	Clock        clock.Clock
	Logger       *slog.Logger
	// Calendars and Counters, if set, check jobs' calendars and give effective next fires (steer.go).
	Calendars Calendars
	Counters  FireCounterReader
}

// Service is the use cases of ejserver.
type Service struct {
	cfg Config
	reg Registry
	clk clock.Clock
	log *slog.Logger
}

// New returns a Service.
func New(cfg Config) *Service {
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Service{cfg: cfg, reg: cfg.Registry, clk: cfg.Clock, log: cfg.Logger}
}

// Job statuses, ElasticJob's console's names.
const (
	StatusOK           = "OK"
	StatusCrashed      = "CRASHED"       // no instance online
	StatusDisabled     = "DISABLED"      // the job, or every server of it, is disabled
	StatusShardingFlag = "SHARDING_FLAG" // an item's owner is offline, or the job is not sharded yet
)

// Item statuses, in ElasticJob's precedence (DISABLED > RUNNING > SHARDING_FLAG > PENDING) plus the
// MISFIRE and COMPLETED states ejserver records.
const (
	ItemDisabled     = "DISABLED"
	ItemRunning      = "RUNNING"
	ItemShardingFlag = "SHARDING_FLAG"
	ItemMisfire      = "MISFIRE"
	ItemCompleted    = "COMPLETED"
	ItemPending      = "PENDING"
)

// JobView is a job as the API shows it: its config (secrets never included) and its state.
type JobView struct {
	ejserver.JobConfig
	Status          string     `json:"status"`
	InstanceCount   int        `json:"instanceCount"`
	Leader          string     `json:"leader,omitempty"`
	CronDescription string     `json:"cronDescription,omitempty"`
	NextFireTime    *time.Time `json:"nextFireTime,omitempty"`
	LastFireTime    *time.Time `json:"lastFireTime,omitempty"`
	// Version is the config node's version: the job's ETag.
	Version int32 `json:"version"`
	// Stats are the execution counts of the last hour and day (when a history store is configured).
	Stats *JobStats `json:"stats,omitempty"`
	// LastResult is the latest execution of the job (when a history store is configured).
	LastResult *ejserver.Execution `json:"lastResult,omitempty"`
	// Problems lists what keeps the job from firing as configured (clock difference, gone receiver...).
	Problems []string `json:"problems,omitempty"`
}

// JobStats are ElasticJob's runtime statistics of a job.
type JobStats struct {
	LastHourSuccess int64 `json:"lastHourSuccess"`
	LastHourFailure int64 `json:"lastHourFailure"`
	LastDaySuccess  int64 `json:"lastDaySuccess"`
	LastDayFailure  int64 `json:"lastDayFailure"`
}

// JobStatus computes ElasticJob's job status from a snapshot.
func JobStatus(s *cluster.JobSnapshot) string {
	switch {
	case s.Config.Disabled:
		return StatusDisabled
	case len(s.Instances) == 0:
		return StatusCrashed
	}
	allDisabled := true
	for _, ip := range s.Instances {
		if !s.ServerDisabled(ip) {
			allDisabled = false
		}
	}
	if allDisabled {
		return StatusDisabled
	}
	if s.Necessary || !s.Sharded() {
		return StatusShardingFlag
	}
	for i := range s.Config.ShardingTotalCount {
		if !s.Online(s.Items[i].Owner) {
			return StatusShardingFlag
		}
	}
	return StatusOK
}

func (s *Service) view(cfg ejserver.JobConfig, version int32, snap *cluster.JobSnapshot) JobView {
	v := JobView{JobConfig: cfg, Version: version, CronDescription: s.describe(cfg.Cron)}
	if v.CronDescription == "" && cfg.Cron == "" {
		v.CronDescription = "never on its own: run by trigger only"
	}
	if snap != nil {
		// the cache may not have seen the write this view answers yet: judge the status by cfg
		fresh := *snap
		fresh.Config = &cfg
		v.Status, v.InstanceCount, v.Leader = JobStatus(&fresh), len(snap.Instances), snap.Leader
	} else {
		v.Status = StatusShardingFlag // not loaded by this peer yet
	}
	if s.cfg.Scheduler != nil && !cfg.Disabled {
		if next := s.cfg.Scheduler.Next(cfg.JobName); !next.IsZero() {
			v.NextFireTime = &next
		}
	}
	if s.cfg.Runtime != nil {
		st := s.cfg.Runtime.Status(cfg.JobName)
		if !st.LastFireAt.IsZero() {
			last := st.LastFireAt
			v.LastFireTime = &last
		}
		if st.ClockError != "" {
			v.Problems = append(v.Problems, "clock check: "+st.ClockError)
		}
	}
	s.steerView(&v)
	return v
}

func (s *Service) describe(expr string) string {
	if s.cfg.DescribeCron == nil || expr == "" {
		return ""
	}
	return s.cfg.DescribeCron(expr)
}

// CreateJob validates and stores a new job. A secret generated on request is returned once, here.
func (s *Service) CreateJob(ctx context.Context, cfg ejserver.JobConfig) (JobView, string, error) {
	cfg.Normalize()
	if err := s.checkJob(&cfg); err != nil {
		return JobView{}, "", err
	}
	generated := ""
	if cfg.Webhook.GenerateSecret {
		generated = s.cfg.NewSecret()
		cfg.Webhook.Secret = generated
	}
	cfg.Webhook.GenerateSecret = false
	cfg.Webhook.PreviousSecret, cfg.Webhook.PreviousSecretExpiresAt = "", time.Time{}
	cfg.Pause = nil // set only by PauseJob
	version, err := s.reg.CreateJobSharded(cfg, s.firstOwners(cfg))
	if err != nil {
		return JobView{}, "", err
	}
	s.log.Info("job created", "job", cfg.JobName)
	return s.view(cfg, version, s.reg.Job(cfg.JobName)), generated, nil
}

func (s *Service) checkJob(cfg *ejserver.JobConfig) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	if s.cfg.Targets != nil {
		if err := s.cfg.Targets.CheckURL(cfg.Webhook.URL); err != nil {
			return ejserver.Invalid("webhook.url", "%v", err)
		}
	}
	return s.checkCalendars(cfg)
}

// GetJob reads one job.
func (s *Service) GetJob(ctx context.Context, name string) (JobView, error) {
	cfg, version, err := s.storedJob(name)
	if err != nil {
		return JobView{}, err
	}
	v := s.view(cfg, version, s.reg.Job(name))
	s.addHistory(ctx, []*JobView{&v})
	return v, nil
}

// JobConfig reads one job's stored config, a change made a moment ago included, and nothing else: the audit
// trail's before and after of a change. GetJob's view adds the job's statistics, three history queries, which
// were ~35 % of a peer's CPU while a registration of 10,000 jobs went through it (a creation's audit entry
// read the new job's view).
func (s *Service) JobConfig(ctx context.Context, name string) (ejserver.JobConfig, error) {
	cfg, _, err := s.storedJob(name)
	return cfg, err
}

// storedJob reads a job's config and its version from ZooKeeper; ENOTFOUND for a name no job can have.
func (s *Service) storedJob(name string) (ejserver.JobConfig, int32, error) {
	if err := ejserver.ValidateJobName(name); err != nil {
		return ejserver.JobConfig{}, 0, ejserver.Errorf(ejserver.ENOTFOUND, "job %q not found", name)
	}
	return s.reg.GetJob(name)
}

// JobFilter selects jobs in a listing.
type JobFilter struct {
	// Query matches a substring of the name, description or label (case-insensitive).
	Query  string
	Status string
	// After is the cursor: the last job name of the previous page.
	After string
	Limit int
	// Visible, when set, keeps only the jobs it accepts (an API token's scope); Total counts only those.
	Visible func(name, label string) bool
}

// JobPage is one page of jobs.
type JobPage struct {
	Items      []JobView `json:"items"`
	NextCursor string    `json:"nextCursor,omitempty"`
	Total      int       `json:"total"`
}

// ListJobs lists jobs by name from this peer's registry cache (no ZooKeeper reads), one page at a time.
func (s *Service) ListJobs(ctx context.Context, f JobFilter) (JobPage, error) {
	if f.Limit == 0 {
		f.Limit = 100
	}
	if f.Limit < 1 || f.Limit > 1000 {
		return JobPage{}, ejserver.Invalid("limit", "must be between 1 and 1000, got %d", f.Limit)
	}
	if f.Status != "" && !slices.Contains([]string{StatusOK, StatusCrashed, StatusDisabled, StatusShardingFlag}, strings.ToUpper(f.Status)) {
		return JobPage{}, ejserver.Invalid("status", "must be OK, CRASHED, DISABLED or SHARDING_FLAG")
	}
	q := strings.ToLower(f.Query)
	page := JobPage{Items: []JobView{}}
	for _, name := range s.reg.Jobs() {
		snap := s.reg.Job(name)
		if snap == nil {
			continue
		}
		if q != "" && !strings.Contains(strings.ToLower(name), q) &&
			!strings.Contains(strings.ToLower(snap.Config.Description), q) && !strings.Contains(strings.ToLower(snap.Config.Label), q) {
			continue
		}
		if f.Status != "" && !strings.EqualFold(JobStatus(snap), f.Status) {
			continue
		}
		if f.Visible != nil && !f.Visible(name, snap.Config.Label) {
			continue
		}
		page.Total++
		if name <= f.After || len(page.Items) > f.Limit {
			continue
		}
		page.Items = append(page.Items, s.view(*snap.Config, snap.ConfigVersion, snap))
	}
	if len(page.Items) > f.Limit {
		page.Items = page.Items[:f.Limit]
		page.NextCursor = page.Items[f.Limit-1].JobName
	}
	ptrs := make([]*JobView, len(page.Items))
	for i := range page.Items {
		ptrs[i] = &page.Items[i]
	}
	s.addHistory(ctx, ptrs)
	return page, nil
}

// addHistory fills stats and last results from the history store, if any; a store that fails only leaves
// them out.
func (s *Service) addHistory(ctx context.Context, views []*JobView) {
	if s.cfg.History == nil || len(views) == 0 {
		return
	}
	names := make([]string, len(views))
	for i, v := range views {
		names[i] = v.JobName
	}
	now := s.clk.Now()
	hour, err1 := s.cfg.History.CountsSince(ctx, names, now.Add(-time.Hour))
	day, err2 := s.cfg.History.CountsSince(ctx, names, now.Add(-24*time.Hour))
	last, err3 := s.cfg.History.LastExecutions(ctx, names)
	if err := firstErr(err1, err2, err3); err != nil {
		s.log.Warn("history unavailable for job statistics", "err", err)
		return
	}
	for _, v := range views {
		h, d := hour[v.JobName], day[v.JobName]
		v.Stats = &JobStats{LastHourSuccess: h.Success, LastHourFailure: h.Failure, LastDaySuccess: d.Success, LastDayFailure: d.Failure}
		if e, ok := last[v.JobName]; ok {
			e := e
			v.LastResult = &e
			if e.Permanent && !e.Success {
				v.Problems = append(v.Problems, "the last delivery failed permanently: "+e.FailureCause)
			}
		}
	}
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// VersionCheck is a replace's precondition on the job's stored version (the API's If-Match): it says
// whether that version may be replaced. A nil VersionCheck replaces whatever version is stored.
type VersionCheck func(version int32) bool

// Guard is a replace's precondition on the job's stored config (an API token's scope): an error refuses
// the replace. It is checked on the config the conditional write replaces, so a concurrent change can't
// slip a job past it.
type Guard func(cur ejserver.JobConfig) error

// ReplaceJob replaces a job's config if check accepts its stored version (EPRECONDITION if not); the write
// itself is conditional on that version, so a change in between fails it too. The secret follows the rules
// of ejserver.Webhook: absent keeps it, "" removes it, a new one rotates with a grace period.
func (s *Service) ReplaceJob(ctx context.Context, name string, cfg ejserver.JobConfig, check VersionCheck, guard Guard) (JobView, string, error) {
	if cfg.JobName == "" {
		cfg.JobName = name
	}
	if cfg.JobName != name {
		return JobView{}, "", ejserver.Invalid("jobName", "is %q but the URL names %q; a job can't be renamed", cfg.JobName, name)
	}
	cfg.Normalize()
	cur, curVersion, err := s.reg.GetJob(name)
	if err != nil {
		return JobView{}, "", err
	}
	if guard != nil {
		if err := guard(cur); err != nil {
			return JobView{}, "", err
		}
	}
	if check != nil && !check(curVersion) {
		return JobView{}, "", ejserver.Errorf(ejserver.EPRECONDITION, "job %q was changed since the version you sent (it is at version %d now); read it again", name, curVersion)
	}
	cfg.Pause = cur.Pause             // set only by PauseJob and ResumeJob
	cfg.Webhook.MergeTLS(cur.Webhook) // before validation: a kept client key must match the certificate given
	// validate what the user sent, then generate or keep the secret
	if err := s.checkJob(&cfg); err != nil {
		return JobView{}, "", err
	}
	generated := ""
	switch {
	case cfg.Webhook.GenerateSecret:
		generated = s.cfg.NewSecret()
		cfg.Webhook.Secret = generated
	case !cfg.Webhook.SecretGiven():
		cfg.Webhook.Secret = cur.Webhook.Secret
	}
	cfg.Webhook.GenerateSecret = false
	now := s.clk.Now()
	switch {
	case cfg.Webhook.Secret == cur.Webhook.Secret:
		cfg.Webhook.PreviousSecret, cfg.Webhook.PreviousSecretExpiresAt = cur.Webhook.PreviousSecret, cur.Webhook.PreviousSecretExpiresAt
	case cur.Webhook.Secret != "" && cfg.Webhook.Secret != "" && cfg.Webhook.SecretGracePeriodSeconds > 0:
		// a rotation: the old secret keeps signing during the grace period
		cfg.Webhook.PreviousSecret = cur.Webhook.Secret
		cfg.Webhook.PreviousSecretExpiresAt = now.Add(time.Duration(cfg.Webhook.SecretGracePeriodSeconds) * time.Second).UTC().Truncate(time.Second)
		s.log.Info("webhook secret rotated", "job", name, "grace_until", cfg.Webhook.PreviousSecretExpiresAt)
	default:
		cfg.Webhook.PreviousSecret, cfg.Webhook.PreviousSecretExpiresAt = "", time.Time{}
	}
	if !cfg.Webhook.PreviousSecretExpiresAt.IsZero() && !now.Before(cfg.Webhook.PreviousSecretExpiresAt) {
		cfg.Webhook.PreviousSecret, cfg.Webhook.PreviousSecretExpiresAt = "", time.Time{}
	}
	newVersion, err := s.reg.ReplaceJob(cfg, curVersion)
	if err != nil {
		return JobView{}, "", err
	}
	s.log.Info("job replaced", "job", name)
	return s.view(cfg, newVersion, s.reg.Job(name)), generated, nil
}

// DeleteJob deletes a job; every peer stops firing it at once.
func (s *Service) DeleteJob(ctx context.Context, name string) error {
	if ejserver.ValidateJobName(name) != nil {
		return ejserver.Errorf(ejserver.ENOTFOUND, "job %q not found", name)
	}
	if err := s.reg.DeleteJob(name); err != nil {
		return err
	}
	s.log.Info("job deleted", "job", name)
	return nil
}

// SetJobDisabled disables or enables a job cluster-wide (its config's disabled field). Enabling also puts
// this peer back on the job if an operator had removed its instance node.
func (s *Service) SetJobDisabled(ctx context.Context, name string, disabled bool) (JobView, error) {
	for attempt := 0; ; attempt++ {
		cfg, version, err := s.reg.GetJob(name)
		if err != nil {
			return JobView{}, err
		}
		cfg.Disabled = disabled
		newVersion, err := s.reg.ReplaceJob(cfg, version)
		if ejserver.ErrorCodeOf(err) == ejserver.EPRECONDITION && attempt < 3 {
			continue
		}
		if err != nil {
			return JobView{}, err
		}
		if !disabled {
			s.reg.Reregister(name)
		}
		return s.view(cfg, newVersion, s.reg.Job(name)), nil
	}
}

// TriggerRequest is a manual trigger: optionally a jobParameter override and a subset of items.
type TriggerRequest struct {
	JobParameter *string `json:"jobParameter,omitempty"`
	Items        []int   `json:"items,omitempty"`
	// TraceParent and TraceState are the request's W3C trace context headers (not part of the body).
	TraceParent string `json:"-"`
	TraceState  string `json:"-"`
}

// TriggerResult says what a trigger reached.
type TriggerResult struct {
	TriggerID    string              `json:"triggerId"`
	JobName      string              `json:"jobName"`
	JobParameter string              `json:"jobParameter"`
	Instances    []TriggeredInstance `json:"instances"`
	// Items are the items that will run; Unassigned the requested ones no online instance owns yet (they
	// run on the instance the next resharding gives them).
	Items   []int  `json:"items"`
	Message string `json:"message"`
}

// TriggeredInstance is one instance a trigger reached and the items it owns now.
type TriggeredInstance struct {
	InstanceID string `json:"instanceId"`
	Items      []int  `json:"items"`
	// Running lists items still running there: each runs again right after its current run.
	Running []int `json:"running,omitempty"`
}

// TriggerJob asks every online instance of the job to run its items once now (ElasticJob's
// trigger/{instanceId} nodes, carrying the override and subset).
func (s *Service) TriggerJob(ctx context.Context, name string, req TriggerRequest) (TriggerResult, error) {
	cfg, _, err := s.reg.GetJob(name)
	if err != nil {
		return TriggerResult{}, err
	}
	if cfg.Disabled {
		return TriggerResult{}, ejserver.Errorf(ejserver.ECONFLICT, "job %q is disabled: enable it first", name)
	}
	if req.JobParameter != nil {
		if len(*req.JobParameter) > ejserver.MaxJobParameterLen {
			return TriggerResult{}, ejserver.Invalid("jobParameter", "is longer than %d bytes", ejserver.MaxJobParameterLen)
		}
	}
	seen := map[int]bool{}
	for _, it := range req.Items {
		if it < 0 || it >= cfg.ShardingTotalCount {
			return TriggerResult{}, ejserver.Invalid("items", "item %d is outside 0..%d", it, cfg.ShardingTotalCount-1)
		}
		if seen[it] {
			return TriggerResult{}, ejserver.Invalid("items", "item %d is given twice", it)
		}
		seen[it] = true
	}
	// a job created a moment ago may not have its instances registered yet: give them a moment
	wctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	snap, _ := s.reg.Wait(wctx, name, func(j *cluster.JobSnapshot) bool { return ownersListed(j, s.reg.PeerLive) })
	cancel()
	if snap == nil || len(snap.Instances) == 0 {
		return TriggerResult{}, ejserver.Errorf(ejserver.ECONFLICT, "job %q has no online instance to run it", name)
	}
	targets := snap.Available() // sorted
	if len(targets) == 0 {
		return TriggerResult{}, ejserver.Errorf(ejserver.ECONFLICT, "every server of job %q is disabled", name)
	}
	id := ejserver.NewExecutionID()
	want := req.Items
	if len(want) == 0 {
		want = nil
	}
	if err := s.reg.CreateTriggers(name, targets, cluster.TriggerRequest{ID: id, JobParameter: req.JobParameter, Items: want, RequestedAt: s.clk.Now().UTC(), Instances: targets,
		TraceParent: req.TraceParent, TraceState: req.TraceState}); err != nil {
		return TriggerResult{}, err
	}
	res := TriggerResult{TriggerID: id, JobName: name, JobParameter: cfg.JobParameter, Items: []int{}}
	if req.JobParameter != nil {
		res.JobParameter = *req.JobParameter
	}
	details, _ := s.reg.ItemDetails(name, cfg.ShardingTotalCount)
	for _, target := range targets {
		ti := TriggeredInstance{InstanceID: target, Items: []int{}}
		for i := range cfg.ShardingTotalCount {
			it := snap.Item(i)
			if it.Owner != target || it.Disabled || (want != nil && !seen[i]) {
				continue
			}
			ti.Items = append(ti.Items, i)
			res.Items = append(res.Items, i)
			if i < len(details) && details[i].Running != nil {
				ti.Running = append(ti.Running, i)
			}
		}
		res.Instances = append(res.Instances, ti)
	}
	slices.Sort(res.Items)
	switch {
	case !snap.Sharded() || snap.Necessary:
		res.Message = "triggered; the job is resharded first, so its items run on the instances the resharding gives them"
	case len(res.Items) == 0:
		res.Message = "triggered, but no enabled item matches: nothing will run"
	default:
		res.Message = fmt.Sprintf("triggered %d item(s) on %d instance(s); items still running run again right after", len(res.Items), len(targets))
	}
	s.log.Info("job triggered", "job", name, "trigger", id, "items", res.Items)
	return res, nil
}

// ItemView is one item of the sharding view.
type ItemView struct {
	Item        int                `json:"item"`
	Parameter   string             `json:"parameter"`
	Instance    string             `json:"instance,omitempty"`
	ServerIP    string             `json:"serverIp,omitempty"`
	Status      string             `json:"status"`
	Disabled    bool               `json:"disabled"`
	Misfire     bool               `json:"misfire"`
	Failover    string             `json:"failover,omitempty"`
	Running     *RunningView       `json:"running,omitempty"`
	LastOutcome *cluster.Completed `json:"lastOutcome,omitempty"`
	OwnerOnline bool               `json:"ownerOnline"`
}

// RunningView is the execution of an item in flight.
type RunningView struct {
	InstanceID  string          `json:"instanceId"`
	ExecutionID string          `json:"executionId"`
	Source      ejserver.Source `json:"source"`
	ScheduledAt time.Time       `json:"scheduledAt"`
	// The fields below are set for an item whose receiver accepted it (202): it runs under a lease.
	Async bool `json:"async,omitempty"`
	// State is RUNNING, or RETRYING while the item is POSTed again after its lease ran out.
	State          string     `json:"state,omitempty"`
	Attempt        int        `json:"attempt,omitempty"`
	Progress       *int       `json:"progress,omitempty"`
	Message        string     `json:"message,omitempty"`
	StartedAt      *time.Time `json:"startedAt,omitempty"`
	HeartbeatAt    *time.Time `json:"heartbeatAt,omitempty"`
	LeaseExpiresAt *time.Time `json:"leaseExpiresAt,omitempty"`
	// ElapsedMs is the time since the item's first request started.
	ElapsedMs int64 `json:"elapsedMs,omitempty"`
}

// Sharding returns the job's items with their owner and status (ElasticJob's precedence).
func (s *Service) Sharding(ctx context.Context, name string) ([]ItemView, error) {
	cfg, _, err := s.reg.GetJob(name)
	if err != nil {
		return nil, err
	}
	details, err := s.reg.ItemDetails(name, cfg.ShardingTotalCount)
	if err != nil {
		return nil, err
	}
	params, _ := ejserver.ParseShardingItemParameters(cfg.ShardingItemParameters, cfg.ShardingTotalCount)
	snap := s.reg.Job(name)
	out := make([]ItemView, 0, len(details))
	for _, d := range details {
		v := ItemView{Item: d.Item, Parameter: params[d.Item], Instance: d.Owner, Disabled: d.Disabled,
			Misfire: d.Misfire, Failover: d.FailoverTo, LastOutcome: d.Completed}
		if snap != nil {
			v.ServerIP = snap.Instances[d.Owner]
			v.OwnerOnline = snap.Online(d.Owner)
		}
		if d.Running != nil {
			v.Running = &RunningView{InstanceID: d.Running.InstanceID, ExecutionID: d.Running.ExecutionID,
				Source: d.Running.Source, ScheduledAt: d.Running.ScheduledAt, Async: d.Running.Async}
			if d.Running.Async && cluster.ValidExecutionID(d.Running.ExecutionID) {
				s.withLease(v.Running)
			}
		}
		necessary := snap != nil && snap.Necessary
		switch {
		case d.Disabled:
			v.Status = ItemDisabled
		case d.Running != nil:
			v.Status = ItemRunning
		case d.Owner == "" || !v.OwnerOnline || necessary:
			v.Status = ItemShardingFlag
		case d.Misfire:
			v.Status = ItemMisfire
		case d.Completed != nil:
			v.Status = ItemCompleted
		default:
			v.Status = ItemPending
		}
		out = append(out, v)
	}
	return out, nil
}

// SetItemDisabled disables or enables one item of a job.
func (s *Service) SetItemDisabled(ctx context.Context, name string, item int, disabled bool) error {
	cfg, _, err := s.reg.GetJob(name)
	if err != nil {
		return err
	}
	if item < 0 || item >= cfg.ShardingTotalCount {
		return ejserver.Errorf(ejserver.ENOTFOUND, "job %q has no item %d (items are 0..%d)", name, item, cfg.ShardingTotalCount-1)
	}
	return s.reg.SetItemDisabled(name, item, disabled)
}

// Dump returns the job's registry subtree, one "path | value" line per node (ElasticJob's dump); webhook
// secrets are masked.
func (s *Service) Dump(ctx context.Context, name string) (string, error) {
	if ejserver.ValidateJobName(name) != nil {
		return "", ejserver.Errorf(ejserver.ENOTFOUND, "job %q not found", name)
	}
	lines, err := s.reg.Dump(name)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(l.Path)
		b.WriteString(" | ")
		b.WriteString(strings.ReplaceAll(l.Value, "\n", "\\n"))
		b.WriteByte('\n')
	}
	return b.String(), nil
}

// withLease adds an accepted item's lease to its running view: state, progress, message, expiry, elapsed time.
func (s *Service) withLease(v *RunningView) {
	l, _, err := s.reg.ReadLease(v.ExecutionID)
	if err != nil {
		return // gone meanwhile, or unreadable: the running node alone is shown
	}
	due, started := l.DueAt(), l.StartedAt
	v.State, v.Attempt, v.Progress, v.Message, v.StartedAt = string(l.State), l.Attempt, l.Progress, l.Message, &started
	if !due.IsZero() {
		v.LeaseExpiresAt = &due
	}
	if !l.HeartbeatAt.IsZero() {
		hb := l.HeartbeatAt
		v.HeartbeatAt = &hb
	}
	v.ElapsedMs = s.clk.Now().Sub(started).Milliseconds()
}
