package cluster

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/ejserver/ejserver"
)

// Identity is this peer as the registry records it.
type Identity struct {
	// InstanceID is ElasticJob's jobInstanceId, {ip}@-@{pid} unless configured.
	InstanceID string `json:"instanceId"`
	ServerIP   string `json:"serverIp"`
	Hostname   string `json:"hostname"`
	// APIAddress is where this peer's API listens, for operators and the console.
	APIAddress string    `json:"apiAddress,omitempty"`
	Version    string    `json:"version,omitempty"`
	StartedAt  time.Time `json:"startedAt"`
}

// instanceData is what ElasticJob writes to instances/{id}.
func instanceData(me Identity) []byte {
	return []byte("jobInstanceId: " + me.InstanceID + "\nserverIp: " + me.ServerIP + "\n")
}

// serverIPOf reads serverIp from an instance node, falling back to the {ip}@-@ prefix of the id.
func serverIPOf(id string, data []byte) string {
	if ip := yamlLine(data, "serverIp"); ip != "" {
		return ip
	}
	ip, _, _ := strings.Cut(id, "@-@")
	return ip
}

// yamlLine reads "key: value" from the flat YAML ElasticJob writes to instance and running nodes.
func yamlLine(data []byte, key string) string {
	for line := range strings.Lines(string(data)) {
		k, v, ok := strings.Cut(strings.TrimRight(line, "\r\n"), ":")
		if ok && strings.TrimSpace(k) == key {
			return strings.Trim(strings.TrimSpace(v), `"'`)
		}
	}
	return ""
}

// Running is the content of sharding/{i}/running: who runs the item and which execution it is, so a survivor
// can re-POST an interrupted item with the same executionId. The first line is ElasticJob's jobInstanceId.
type Running struct {
	InstanceID  string
	ExecutionID string
	TaskID      string
	Source      ejserver.Source
	ScheduledAt time.Time
	// JobParameter is the parameter the execution was started with (a manual trigger may override it).
	JobParameter string
	// Async: the receiver accepted the item (202); the node is persistent and its execution's lease (in
	// /{namespace}.ejserver/leases) decides when it goes, not the peer that wrote it.
	Async bool
	// Fire is the key of the fire the run belongs to in the fire ledger (alerts and hooks follow the job), so
	// that a failover run ends the same fire.
	Fire string
	// Workflow is the `workflow` object of a workflow node's item (one line of JSON), re-sent by a failover run.
	Workflow json.RawMessage
}

// encode writes the node's lines into one buffer sized up front: a wide fire's task id lists every item its
// peer runs (~3 KB at 667 items, written as ranges), and concatenating each line before appending it, then
// copying the whole into the node's data, allocated that several times per item at each fire.
func (r Running) encode() []byte {
	var param []byte
	if r.JobParameter != "" {
		param, _ = json.Marshal(r.JobParameter) // JSON quoting keeps it on one line
	}
	task := rangedTaskID(r.TaskID) // its items as ranges (taskid.go)
	const keys = len("jobInstanceId: \nexecutionId: \ntaskId: \nsource: \nscheduledAt: \njobParameter: \nasync: true\nfire: \nworkflow: \n")
	b := make([]byte, 0, keys+len(r.InstanceID)+len(r.ExecutionID)+task.size()+len(r.Source)+len(time.RFC3339Nano)+
		len(param)+len(r.Fire)+len(r.Workflow))
	b = appendLine(b, "jobInstanceId: ", r.InstanceID)
	b = appendLine(b, "executionId: ", r.ExecutionID)
	b = append(task.appendTo(append(b, "taskId: "...)), '\n')
	b = appendLine(b, "source: ", string(r.Source))
	b = append(b, "scheduledAt: "...)
	b = r.ScheduledAt.UTC().AppendFormat(b, time.RFC3339Nano)
	b = append(b, '\n')
	if param != nil {
		b = append(append(append(b, "jobParameter: "...), param...), '\n')
	}
	if r.Async {
		b = append(b, "async: true\n"...)
	}
	if r.Fire != "" {
		b = appendLine(b, "fire: ", r.Fire)
	}
	if len(r.Workflow) > 0 {
		b = append(append(append(b, "workflow: "...), r.Workflow...), '\n') // compact JSON: one line
	}
	return b
}

func appendLine(b []byte, key, value string) []byte {
	return append(append(append(b, key...), value...), '\n')
}

func decodeRunning(data []byte) Running {
	r := Running{
		InstanceID:  yamlLine(data, "jobInstanceId"),
		ExecutionID: yamlLine(data, "executionId"),
		TaskID:      expandTaskID(yamlLine(data, "taskId")),
		Source:      ejserver.Source(yamlLine(data, "source")),
	}
	if r.InstanceID == "" { // an ElasticJob instance writes the bare id, or nothing
		r.InstanceID = strings.TrimSpace(string(data))
	}
	r.ScheduledAt, _ = time.Parse(time.RFC3339Nano, yamlLine(data, "scheduledAt"))
	r.Async = yamlLine(data, "async") == "true"
	r.Fire = yamlLine(data, "fire")
	if w := yamlLine(data, "workflow"); w != "" && json.Valid([]byte(w)) {
		r.Workflow = json.RawMessage(w)
	}
	for line := range strings.Lines(string(data)) {
		if v, ok := strings.CutPrefix(strings.TrimRight(line, "\n"), "jobParameter: "); ok {
			_ = json.Unmarshal([]byte(v), &r.JobParameter)
		}
	}
	return r
}

// Completed is the content of sharding/{i}/completed: the last outcome of the item, from any peer.
type Completed struct {
	ExecutionID string          `json:"executionId"`
	InstanceID  string          `json:"instanceId"`
	Source      ejserver.Source `json:"source"`
	Success     bool            `json:"success"`
	StatusCode  int             `json:"statusCode,omitempty"`
	ScheduledAt time.Time       `json:"scheduledAt"`
	FinishedAt  time.Time       `json:"finishedAt"`
	Permanent   bool            `json:"permanent,omitempty"`
	// State is an accepted (async) item's final state: SUCCEEDED, FAILED, EXPIRED or CANCELLED; LOST for a run
	// a vanished instance left in flight.
	State string `json:"state,omitempty"`
	// Latest is the latest scheduled fire of the item that has ended, which a catch-up of an older fire ending
	// after it does not move back (catchUp all counts missed fires from it); zero when unknown.
	Latest time.Time `json:"latest,omitzero"`
}

// LastFire is the latest scheduled fire the completed node says has run: Latest, or the fire it records
// unless that ran on request (a manual trigger's time is no fire of the schedule); zero when unknown.
func (c Completed) LastFire() time.Time {
	t := c.Latest
	if !c.Source.OnRequest() && c.ScheduledAt.After(t) {
		t = c.ScheduledAt
	}
	return t
}

// TriggerRequest is the content of trigger/{instanceId}. ElasticJob's operators create the node empty:
// that means "run every item you own once, with the configured parameter".
type TriggerRequest struct {
	ID           string    `json:"id,omitempty"`
	JobParameter *string   `json:"jobParameter,omitempty"`
	Items        []int     `json:"items,omitempty"`
	RequestedAt  time.Time `json:"requestedAt,omitzero"`
	// Instances are the instances the API sent the trigger to. The job's leader, running the trigger,
	// hands it on to any online instance that owns requested items and is not listed (one that registered
	// between the request and a resharding). An operator's node lists none: it targets one instance.
	Instances []string `json:"instances,omitempty"`
	// TraceParent and TraceState are the W3C trace context the trigger request arrived with: the fire's
	// items become children of the caller's trace.
	TraceParent string `json:"traceparent,omitempty"`
	TraceState  string `json:"tracestate,omitempty"`
	// Misfire: the one catch-up of items whose accepted (asynchronous) run ended after fires found them
	// running; the items run with source MISFIRE.
	Misfire bool `json:"misfire,omitempty"`
	// Workflow, set for a workflow node's fire, is the `workflow` object of its items' bodies (the run, the
	// node, the parents' ends); the items run with source WORKFLOW.
	Workflow json.RawMessage `json:"workflow,omitempty"`
}

func decodeTrigger(data []byte) TriggerRequest {
	var t TriggerRequest
	if len(strings.TrimSpace(string(data))) > 0 {
		_ = json.Unmarshal(data, &t) // a malformed payload still triggers a plain run
	}
	return t
}
