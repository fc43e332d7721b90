package cluster

import (
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
			*s = unique.Make(*s).Value()
		}
	}
	if c.JobType != "" {
		c.JobType = ejserver.JobType(unique.Make(string(c.JobType)).Value())
	}
}
