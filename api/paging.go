package api

import (
	"net/netip"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/ejserver/ejserver"
)

// Page sizes of the lists the API pages itself (jobs and executions are paged by the service).
const (
	defaultPageSize = 100
	maxPageSize     = 1000
)

func limitParam(c echo.Context) (int, error) { return limitParamOf(c, defaultPageSize, maxPageSize) }

// limitParamOf reads the limit query parameter: def when absent, else 1..max.
func limitParamOf(c echo.Context, def, max int) (int, error) {
	n, err := intParam(c, "limit", def)
	if err != nil {
		return 0, err
	}
	if n < 1 || n > max {
		return 0, ejserver.Invalid("limit", "must be between 1 and %d, got %d", max, n)
	}
	return n, nil
}

// pageAfter returns the items whose key sorts after cursor (all of them for ""), at most limit, and the
// cursor of the next page ("" on the last one). A key cursor, unlike an offset, skips or repeats nothing
// when items come and go between pages.
func pageAfter[T any](items []T, key func(T) string, cmp func(a, b string) int, cursor string, limit int) ([]T, string) {
	sorted := slices.Clone(items)
	slices.SortFunc(sorted, func(a, b T) int { return cmp(key(a), key(b)) })
	out := make([]T, 0, min(limit, len(sorted)))
	for _, it := range sorted {
		if cursor != "" && cmp(key(it), cursor) <= 0 {
			continue
		}
		if len(out) == limit {
			return out, key(out[len(out)-1])
		}
		out = append(out, it)
	}
	return out, ""
}

// compareIPs orders IP addresses numerically, anything else after them as text.
func compareIPs(a, b string) int {
	pa, ea := netip.ParseAddr(a)
	pb, eb := netip.ParseAddr(b)
	switch {
	case ea == nil && eb == nil:
		return pa.Compare(pb)
	case ea == nil:
		return -1
	case eb == nil:
		return 1
	}
	return strings.Compare(a, b)
}
