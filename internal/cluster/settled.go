package cluster

import (
	"strconv"
	"strings"
)

// A fire needs the nodes that decide which items it runs to be read (JobSnapshot.ItemsSettled), not every
// node of the job: while thousands of jobs register at once, each job has its register, campaign, instances,
// servers and leader refreshes queued behind the other jobs' (issue 21), and a fire that waited for all of
// them waited its 30 s and was skipped. The running node's ownership fence (BeginItem) still guards a fire
// made from an owner that a resharding has just replaced.

// decidesItems reports whether a refresh of kind k reads a node that decides which items this peer fires:
// the config (shardingTotalCount), the sharding folder and each item's instance, disabled and failover
// nodes, leader/sharding/necessary (a resharding is due: nobody fires) and leader/failover/items. The other
// kinds read or write nodes a fire does not choose its items by (instances, servers, leader, trigger) or are
// this peer's registration writes, which a fire checks on their own (JobSnapshot.Registered).
func decidesItems(k refreshKind) bool {
	switch k {
	case kindLoad, kindConfig, kindSharding, kindItemInstance, kindItemDisabled, kindItemFailover,
		kindNecessary, kindFailoverItems:
		return true
	}
	return false
}

// urgent reports whether a refresh runs before the queued others: a change of a node that decides a loaded
// job's items (a resharding's owners, a disabled item, a failover) is read before the loads and registrations
// of other jobs that a burst of creations or a restart queued, so the job's fires, which wait for it
// (ItemsSettled), are not held behind thousands of unrelated jobs. A load is not urgent: it is the bulk.
//
// The live peers' listing and the reports of deletions applied from their events (deletions.go) are urgent
// too: a stopped peer's items are held ("stopping") until its peer node is seen gone, and a leader reshards
// for a lost instance once it hears of it; neither reads more than one node.
func urgent(k refreshKey) bool {
	return k.kind == kindPeers || k.kind == kindReport || (k.kind != kindLoad && decidesItems(k.kind))
}

// front reports whether a refresh runs before all the others, urgent ones included: the live peers' listing.
// A peer's instance node created in a job is applied from its event only once the listing names the peer
// (deletions.go), else the job's instances are listed: a restarted peer registers on every job while the
// survivors' urgent lane still holds its previous process's deletions (~85,000 reports and ~32,000 campaigns
// at 100,000 jobs), and behind them the listing waited ~50 s while ~100,000 instance events each queued a
// listing of their job, read ~350 a second: the leaders learnt of the returned peer, and gave it its items
// back, over minutes (the refresher's backlog log of a restart at 100,000 jobs).
//
// The campaigns are not: they read nothing, but a won campaign's news reaches the coordinator as a report
// (kindReport), which queues in the urgent lane. Run ahead of the ~94,000 reports of a stopped peer's
// deletions, the campaigns were won early and their reports came last: the new leaders resharded late and
// ~3,000 fires per survivor waited their 30 s for "the owner of item 0 is gone" (run 17: 2,708 missed against
// run 16's 1,203).
func front(k refreshKey) bool { return k.kind == kindPeers }

// expediteLoad reads a job's load, when one is queued, before the other queued loads: someone waits for it
// (Registry.Wait: a fire whose job is not ItemsSettled, or not loaded yet). A load is the one read deciding a
// job's items that is not urgent; the others (its items', necessary, config) run before every load already.
func (r *Registry) expediteLoad(job string) bool {
	return r.w.expedite(refreshKey{kind: kindLoad, job: job})
}

// PendingReads names the queued or running reads of a job that decide its items (decidesItems), for a fire's
// log line when it gave up waiting for them: "load (queued)", "item_instance 0 (running)"... items is the
// number of items to look for. It looks the keys up (O(items)), whatever the queues' length.
func (r *Registry) PendingReads(job string, items int) string {
	var keys []refreshKey
	for k := kindJobs; k <= lastKind; k++ {
		switch {
		case !decidesItems(k):
		case itemKind(k):
			for i := range items {
				keys = append(keys, refreshKey{kind: k, job: job, item: i})
			}
		default:
			keys = append(keys, refreshKey{kind: k, job: job})
		}
	}
	var out []string
	for _, k := range keys {
		st, ok := r.w.stateOf(k)
		if !ok {
			continue
		}
		what := k.kind.String()
		if itemKind(k.kind) {
			what += " " + strconv.Itoa(k.item)
		}
		switch {
		case st&keyRunning != 0:
			what += " (running)"
		case st&keyExpedited != 0:
			what += " (queued, expedited)"
		default:
			what += " (queued)"
		}
		out = append(out, what)
	}
	return strings.Join(out, ", ")
}

// itemKind reports whether refreshes of kind k read one item's node (their keys name the item).
func itemKind(k refreshKind) bool {
	return k == kindItemInstance || k == kindItemDisabled || k == kindItemFailover
}
