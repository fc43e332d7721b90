package audit

import (
	"time"
)

// Action is what an entry records.
type Action string

// The actions.
const (
	JobCreate      Action = "job.create"
	JobReplace     Action = "job.replace"
	JobDelete      Action = "job.delete"
	JobEnable      Action = "job.enable"
	JobDisable     Action = "job.disable"
	JobTrigger     Action = "job.trigger"
	ItemEnable     Action = "item.enable"
	ItemDisable    Action = "item.disable"
	JobServerOn    Action = "job.server.enable"
	JobServerOff   Action = "job.server.disable"
	ServerEnable   Action = "server.enable"
	ServerDisable  Action = "server.disable"
	ChannelCreate  Action = "channel.create"
	ChannelReplace Action = "channel.replace"
	ChannelDelete  Action = "channel.delete"
	ChannelTest    Action = "channel.test"
	JobsFileApply  Action = "jobsfile.apply"
	// The workflow actions name the workflow (and run) in Detail.
	WorkflowCreate  Action = "workflow.create"
	WorkflowReplace Action = "workflow.replace"
	WorkflowDelete  Action = "workflow.delete"
	WorkflowTrigger Action = "workflow.trigger"
	WorkflowCancel  Action = "workflow.run.cancel"
	WorkflowRetry   Action = "workflow.run.retry"
	// JobBackfill starts a backfill of a job's past fires, JobBackfillCancel cancels one (issue 24).
	JobBackfill       Action = "job.backfill"
	JobBackfillCancel Action = "job.backfill.cancel"
	// ExecutionReplay re-runs one execution's item (issue 24).
	ExecutionReplay Action = "execution.replay"
	// Calendars and pause (issue 24): the calendar's name is in Detail.
	CalendarCreate  Action = "calendar.create"
	CalendarReplace Action = "calendar.replace"
	CalendarDelete  Action = "calendar.delete"
	JobPause        Action = "job.pause"
	JobResume       Action = "job.resume"
	AuthDenied      Action = "auth.denied"
	// ZKJobConfig, ZKJobCreate, ZKJobDelete and ZKServerState are changes made in ZooKeeper outside the API
	// (zkCli, another tool).
	ZKJobConfig   Action = "zookeeper.job.config"
	ZKJobCreate   Action = "zookeeper.job.create"
	ZKJobDelete   Action = "zookeeper.job.delete"
	ZKServerState Action = "zookeeper.server.state"
)

// Actions lists every action, for validation and documentation.
var Actions = []Action{JobCreate, JobReplace, JobDelete, JobEnable, JobDisable, JobTrigger, ItemEnable, ItemDisable,
	JobServerOn, JobServerOff, ServerEnable, ServerDisable, ChannelCreate, ChannelReplace, ChannelDelete, ChannelTest,
	JobsFileApply, AuthDenied, ZKJobConfig, ZKJobCreate, ZKJobDelete, ZKServerState, WorkflowCreate, WorkflowReplace,
	WorkflowDelete, WorkflowTrigger, WorkflowCancel, WorkflowRetry,
	JobBackfill, JobBackfillCancel, ExecutionReplay,
	CalendarCreate, CalendarReplace, CalendarDelete, JobPause, JobResume}

// Valid reports whether a is one of Actions.
func (a Action) Valid() bool {
	for _, x := range Actions {
		if x == a {
			return true
		}
	}
	return false
}

// ActorKind says how the actor was identified.
type ActorKind string

// The actor kinds.
const (
	ActorToken       ActorKind = "token"       // a bearer token of the tokens file (Actor is its name)
	ActorCertificate ActorKind = "certificate" // a client certificate mapped to a tokens-file line
	ActorOpen        ActorKind = "open"        // the API runs without tokens: anyone who reaches it
	ActorUnknown     ActorKind = "unknown"     // no or a wrong credential (auth.denied)
	ActorZooKeeper   ActorKind = "zookeeper"   // a change made in ZooKeeper outside the API
	ActorJobsFile    ActorKind = "jobs-file"   // --jobs-file applied at start-up
)

// Outcomes of an entry.
const (
	OutcomeOK     = "ok"
	OutcomeFailed = "failed"
)

// Entry is one audited action. Entries are append-only: nothing changes or deletes one but the retention.
type Entry struct {
	// ID is unique (the recorder makes it); Time is when the action was taken.
	ID   string    `json:"id" example:"01J..."`
	Time time.Time `json:"time"`
	// Actor is the token's name, the certificate's identity, "zookeeper" or "jobs-file".
	Actor     string    `json:"actor" example:"ops"`
	ActorKind ActorKind `json:"actorKind" enums:"token,certificate,open,unknown,zookeeper,jobs-file"`
	Role      string    `json:"role,omitempty" example:"admin"`
	Scope     string    `json:"scope,omitempty"`
	// Source is the client's address, UserAgent its User-Agent header.
	Source    string `json:"source,omitempty" example:"10.0.0.8"`
	UserAgent string `json:"userAgent,omitempty"`
	RequestID string `json:"requestId,omitempty"`
	Action    Action `json:"action" example:"job.disable"`
	// What the action was about (the fields that apply).
	Job     string `json:"job,omitempty" example:"settle"`
	Item    *int   `json:"item,omitempty"`
	Server  string `json:"server,omitempty" example:"10.0.0.7"`
	Channel string `json:"channel,omitempty"`
	// Outcome is ok or failed; Status the HTTP status the API answered (0 for changes outside the API).
	Outcome string `json:"outcome" enums:"ok,failed"`
	Status  int    `json:"status,omitempty" example:"200"`
	// Changes is the field-level difference of a config change (secrets only as "changed").
	Changes []Change `json:"changes,omitempty"`
	// Detail says more: a trigger's override and items, "2 changes, 1 not seen", the path of a denied request.
	Detail string `json:"detail,omitempty"`
	// Count is how many actions the entry stands for (more than 1 for folded auth.denied entries).
	Count int `json:"count"`
	// Instance is the peer that recorded the entry: with SQLite history, the peer whose store holds it.
	Instance string `json:"instance,omitempty" example:"10.0.0.7@-@4242"`
}
