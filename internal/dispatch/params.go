package dispatch

import "github.com/ejserver/ejserver"

// itemParams is a job's shardingItemParameters parsed once per fire rather than once per item: each item's
// run would otherwise parse every entry, and a fire of a 2,000-item job with parameters parse 2,000 entries
// 2,000 times over.
type itemParams struct {
	src    string // the shardingItemParameters and shardingTotalCount parsed
	total  int
	byItem map[int]string
}

func parseItemParams(cfg *ejserver.JobConfig) *itemParams {
	// A stored config has been validated; one that no longer parses gives every item an empty parameter.
	byItem, _ := ejserver.ParseShardingItemParameters(cfg.ShardingItemParameters, cfg.ShardingTotalCount)
	return &itemParams{src: cfg.ShardingItemParameters, total: cfg.ShardingTotalCount, byItem: byItem}
}

// of returns item's parameter under cfg: from p when p was parsed from cfg's parameters, else parsed now.
func (p *itemParams) of(cfg *ejserver.JobConfig, item int) string {
	if p == nil || p.src != cfg.ShardingItemParameters || p.total != cfg.ShardingTotalCount {
		p = parseItemParams(cfg)
	}
	return p.byItem[item]
}
