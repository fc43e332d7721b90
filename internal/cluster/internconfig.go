package cluster

import (
	"sync"
	"unique"

	"github.com/ejserver/ejserver"
)

// internConfig makes the config's strings that many jobs share (their cron, webhook URL and method,
// strategies, parameters) the process's one copy of each value: every peer holds every job's config, and a
// namespace's jobs mostly repeat a few values, each parsed anew from each job's YAML. Unique values (the
// name) and secrets are left as they are.
func internConfig(c *ejserver.JobConfig) {
	for _, s := range []*string{&c.Cron, &c.TimeZone, &c.ShardingItemParameters, &c.JobParameter, &c.Description,
		&c.OverlapPolicy, &c.CatchUp, &c.JobShardingStrategyType, &c.JobExecutorThreadPoolSizeProviderType,
		&c.JobErrorHandlerType, &c.Label, &c.EndAt, &c.Webhook.URL, &c.Webhook.Method} {
		if *s != "" {
			*s = interned.value(*s)
		}
	}
	if c.JobType != "" {
		c.JobType = ejserver.JobType(interned.value(string(c.JobType)))
	}
}

// interned keeps the handles of the interned strings: unique.Make's table holds its values weakly, and a
// string returned by Handle.Value does not keep its entry, so without the handles the first GC after a
// parse forgot every value and the next job's parse made a new copy (measured: two configs parsed on
// either side of a GC shared no string).
var interned handleSet

// internedMax bounds the handles kept: past it the set starts over (strings handed out stay valid), so
// values unique to each job (a description, a parameter) cost no more than without interning.
const internedMax = 4096

type handleSet struct {
	mu sync.Mutex
	m  map[unique.Handle[string]]struct{}
}

func (h *handleSet) value(s string) string {
	u := unique.Make(s)
	h.mu.Lock()
	if _, ok := h.m[u]; !ok {
		if h.m == nil || len(h.m) >= internedMax {
			h.m = make(map[unique.Handle[string]]struct{})
		}
		h.m[u] = struct{}{}
	}
	h.mu.Unlock()
	return u.Value()
}
