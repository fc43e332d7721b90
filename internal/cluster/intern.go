package cluster

import (
	"maps"
	"slices"
	"strconv"
	"sync"
)

// stringMaps shares equal string maps between jobs. Every job's instances/ and servers/ list the same few
// peers and hosts, so at 10,000 jobs a peer held 20,000 maps of the same three entries (~0.5 KB each);
// interned, it holds a handful. The maps it returns are shared: nobody may write them (the registry
// replaces a job's maps, it never edits them, and snapshots hand them out read-only).
type stringMaps struct {
	mu    sync.Mutex
	byKey map[string]map[string]string
	max   int
}

// internedMapsMax bounds the table: past it the table starts over (maps handed out stay valid), so a
// namespace whose jobs all list different peers costs no more than without interning.
const internedMapsMax = 4096

// intern returns a map equal to m: the one already shared for its content, or m itself, now shared.
func (t *stringMaps) intern(m map[string]string) map[string]string {
	if len(m) == 0 {
		return m
	}
	key := mapKey(m)
	t.mu.Lock()
	defer t.mu.Unlock()
	if got, ok := t.byKey[key]; ok {
		return got
	}
	limit := t.max
	if limit <= 0 {
		limit = internedMapsMax
	}
	if t.byKey == nil || len(t.byKey) >= limit {
		t.byKey = make(map[string]map[string]string)
	}
	t.byKey[key] = m
	return m
}

// mapKey is m's content as one string: its sorted keys and values, each prefixed by its length, so that no
// two contents share a key whatever bytes they hold.
func mapKey(m map[string]string) string {
	keys := slices.Sorted(maps.Keys(m))
	var b []byte
	for _, k := range keys {
		for _, s := range [2]string{k, m[k]} {
			b = strconv.AppendInt(b, int64(len(s)), 10)
			b = append(b, ':')
			b = append(b, s...)
		}
	}
	return string(b)
}
