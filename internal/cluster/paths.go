package cluster

import (
	"fmt"
	"path"
	"regexp"
	"strconv"
	"strings"
)

// Node states written to servers/{ip}.
const (
	ServerEnabled  = "ENABLED"
	ServerDisabled = "DISABLED"
	// JobRootData is what ElasticJob's HTTP job type writes to the job root node.
	JobRootData = "HTTP"
)

var namespaceRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// ValidNamespace reports whether ns can be a namespace: one ZooKeeper path segment of safe characters.
func ValidNamespace(ns string) error {
	if !namespaceRE.MatchString(ns) || strings.HasSuffix(ns, metaSuffix) {
		return fmt.Errorf("namespace %q: use 1-64 letters, digits, '_', '.', '-', starting with a letter or digit, not ending in %q", ns, metaSuffix)
	}
	return nil
}

// metaSuffix names the node beside the namespace that holds state which is not per job (peers, clock probe):
// every child of /{namespace} is a job, as ElasticJob's tools assume.
const metaSuffix = ".ejserver"

// Paths builds the registry paths of one namespace. Only validated job names reach it.
type Paths struct{ ns string }

// NewPaths returns the paths of namespace ns.
func NewPaths(ns string) Paths { return Paths{ns: "/" + ns} }

// Root is /{ns}.
func (p Paths) Root() string { return p.ns }

// Meta is /{ns}.ejserver, the home of per-namespace state.
func (p Paths) Meta() string { return p.ns + metaSuffix }

// Peers is the meta folder of ephemeral peer nodes.
func (p Paths) Peers() string { return p.Meta() + "/peers" }

// Peer is one peer's ephemeral node.
func (p Paths) Peer(id string) string { return p.Peers() + "/" + id }

// Leases is the meta folder of the leases of accepted (asynchronous) executions, one node per execution id.
func (p Paths) Leases() string { return p.Meta() + "/leases" }

// Lease is one execution's lease node. Only a validated execution id (a UUID) reaches it.
func (p Paths) Lease(executionID string) string { return p.Leases() + "/" + executionID }

// EndedLeases is the meta folder of the records of ended leases, kept a while (so a repeated completion gets
// the same answer from any peer) apart from the live ones, which the lease watcher lists.
func (p Paths) EndedLeases() string { return p.Meta() + "/ended-leases" }

// EndedLease is one ended execution's record.
func (p Paths) EndedLease(executionID string) string { return p.EndedLeases() + "/" + executionID }

// LeaseWatchers is the meta folder of the ephemeral sequential nodes of the peers that stand for the lease
// watcher duty: the lowest holds it.
func (p Paths) LeaseWatchers() string { return p.Meta() + "/lease-watchers" }

// CallbackSecret is the meta node of the cluster's callback token secret (readable only with the digest).
func (p Paths) CallbackSecret() string { return p.Meta() + "/callback-secret" }

// Channels is the meta folder of the cluster's notification channels, one node per channel name.
func (p Paths) Channels() string { return p.Meta() + "/channels" }

// Channel is one notification channel's node. Only a validated channel name reaches it.
func (p Paths) Channel(name string) string { return p.Channels() + "/" + name }

// Backfills is /{ns}.ejserver/backfills: one folder per job with backfills, one node per backfill.
func (p Paths) Backfills() string { return p.Meta() + "/backfills" }

// JobBackfills is /{ns}.ejserver/backfills/{job}.
func (p Paths) JobBackfills(job string) string { return p.Backfills() + "/" + job }

// Backfill is /{ns}.ejserver/backfills/{job}/{id}: the backfill's state (internal/backfill's JSON).
func (p Paths) Backfill(job, id string) string { return p.JobBackfills(job) + "/" + id }

// BackfillOwners is /{ns}.ejserver/backfill-owners: the ephemeral node of each backfill a peer runs now.
func (p Paths) BackfillOwners() string { return p.Meta() + "/backfill-owners" }

// BackfillOwner is /{ns}.ejserver/backfill-owners/{id}: ephemeral, its data the owner's instance id.
func (p Paths) BackfillOwner(id string) string { return p.BackfillOwners() + "/" + id }

// Clock is the meta node written to read ZooKeeper's clock (its mtime).
func (p Paths) Clock() string { return p.Meta() + "/clock" }

// Job is /{ns}/{job}; it holds "HTTP".
func (p Paths) Job(job string) string { return p.ns + "/" + job }

// Config holds the job's ElasticJob YAML.
func (p Paths) Config(job string) string { return p.Job(job) + "/config" }

// Servers is the folder of servers/{ip}.
func (p Paths) Servers(job string) string { return p.Job(job) + "/servers" }

// Server is servers/{ip}: ENABLED or DISABLED.
func (p Paths) Server(job, ip string) string { return p.Servers(job) + "/" + ip }

// Instances is the folder of ephemeral instance nodes.
func (p Paths) Instances(job string) string { return p.Job(job) + "/instances" }

// Instance is instances/{instanceId}.
func (p Paths) Instance(job, id string) string { return p.Instances(job) + "/" + id }

// Sharding is the folder of items.
func (p Paths) Sharding(job string) string { return p.Job(job) + "/sharding" }

// Item is sharding/{i}.
func (p Paths) Item(job string, i int) string { return p.Sharding(job) + "/" + strconv.Itoa(i) }

// ItemNode is sharding/{i}/{name}: instance, running, misfire, disabled, failover, failovering, completed.
func (p Paths) ItemNode(job string, i int, name string) string { return p.Item(job, i) + "/" + name }

// The children of sharding/{i}.
const (
	NodeInstance    = "instance"
	NodeRunning     = "running"
	NodeMisfire     = "misfire"
	NodeDisabled    = "disabled"
	NodeFailover    = "failover"
	NodeFailovering = "failovering"
	NodeCompleted   = "completed"
)

// Leader is the leader folder.
func (p Paths) Leader(job string) string { return p.Job(job) + "/leader" }

// Election is leader/election.
func (p Paths) Election(job string) string { return p.Leader(job) + "/election" }

// LeaderInstance is leader/election/instance: the ephemeral node of the job's leader.
func (p Paths) LeaderInstance(job string) string { return p.Election(job) + "/instance" }

// ShardingFlags is leader/sharding.
func (p Paths) ShardingFlags(job string) string { return p.Leader(job) + "/sharding" }

// Necessary is leader/sharding/necessary: reshard before the next fire.
func (p Paths) Necessary(job string) string { return p.ShardingFlags(job) + "/necessary" }

// Processing is leader/sharding/processing: the leader is resharding now.
func (p Paths) Processing(job string) string { return p.ShardingFlags(job) + "/processing" }

// FailoverFolder is leader/failover.
func (p Paths) FailoverFolder(job string) string { return p.Leader(job) + "/failover" }

// FailoverItems is leader/failover/items: items waiting to be taken over.
func (p Paths) FailoverItems(job string) string { return p.FailoverFolder(job) + "/items" }

// FailoverItem is leader/failover/items/{i}.
func (p Paths) FailoverItem(job string, i int) string {
	return p.FailoverItems(job) + "/" + strconv.Itoa(i)
}

// Triggers is the trigger folder.
func (p Paths) Triggers(job string) string { return p.Job(job) + "/trigger" }

// Trigger is trigger/{instanceId}: that instance runs the job once now.
func (p Paths) Trigger(job, id string) string { return p.Triggers(job) + "/" + id }

// jobSkeleton lists the persistent folders created with a job, parents first.
func (p Paths) jobSkeleton(job string) []string {
	return []string{
		p.Servers(job), p.Instances(job), p.Sharding(job), p.Leader(job), p.Election(job),
		p.ShardingFlags(job), p.FailoverFolder(job), p.FailoverItems(job), p.Triggers(job),
	}
}

// JobOf returns the job name of a path under the namespace, or "".
func (p Paths) JobOf(pth string) string {
	rest, ok := strings.CutPrefix(pth, p.ns+"/")
	if !ok {
		return ""
	}
	job, _, _ := strings.Cut(rest, "/")
	return job
}

// ItemOf parses the item number of a path sharding/{i}/... of job, or -1.
func (p Paths) ItemOf(job, pth string) int {
	rest, ok := strings.CutPrefix(pth, p.Sharding(job)+"/")
	if !ok {
		return -1
	}
	num, _, _ := strings.Cut(rest, "/")
	i, ok := itemNumber(num)
	if !ok {
		return -1
	}
	return i
}

func parent(pth string) string { return path.Dir(pth) }

// Seen is /{ns}.ejserver/audit-seen: one node per version of a job's config or servers/{ip} node that is
// accounted for in the audit trail (written by the API with its change, or claimed by the one peer that
// records a change made outside the API), so that each change is recorded once for the cluster.
func (p Paths) Seen() string { return p.Meta() + "/audit-seen" }

// SeenJob holds one job's seen nodes.
func (p Paths) SeenJob(job string) string { return p.Seen() + "/" + job }

// SeenConfig names version v of the life (czxid) of a job's config node.
func (p Paths) SeenConfig(job string, czxid int64, v int32) string {
	return p.SeenJob(job) + "/config@" + strconv.FormatInt(czxid, 10) + "@" + strconv.Itoa(int(v))
}

// SeenCreate is the API's mark of a job it created, made in the creating transaction: the mark's czxid is
// the config node's, which tells the life it marks.
func (p Paths) SeenCreate(job string) string { return p.SeenJob(job) + "/create" }

// SeenCreated names the creation of the life (czxid) of a job's config node outside the API.
func (p Paths) SeenCreated(job string, czxid int64) string {
	return p.SeenCreate(job) + "@" + strconv.FormatInt(czxid, 10)
}

// SeenDelete names the deletion of the life (czxid) of a job's config node.
func (p Paths) SeenDelete(job string, czxid int64) string {
	return p.SeenJob(job) + "/" + seenDeletePrefix + strconv.FormatInt(czxid, 10)
}

const seenDeletePrefix = "delete@"

// SeenServer names version v of the life (czxid) of a job's servers/{ip} node.
func (p Paths) SeenServer(job, ip string, czxid int64, v int32) string {
	return p.SeenJob(job) + "/server@" + ip + "@" + strconv.FormatInt(czxid, 10) + "@" + strconv.Itoa(int(v))
}
