package metrics

import (
	"github.com/ejserver/ejserver/internal/dispatch"
	"github.com/ejserver/ejserver/internal/failover"
	"github.com/ejserver/ejserver/internal/sharding"
)

// Metrics is the observer of the executor, the resharding coordinator and the failover manager.
var (
	_ dispatch.Observer = (*Metrics)(nil)
	_ sharding.Observer = (*Metrics)(nil)
	_ failover.Observer = (*Metrics)(nil)
)
