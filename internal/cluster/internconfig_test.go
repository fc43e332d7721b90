package cluster

import (
	"runtime"
	"testing"
	"unsafe"

	"github.com/ejserver/ejserver"
)

// TestParsedConfigsShareTheirRepeatedStrings: two jobs' equal cron and URL are one copy, even with a GC
// between their parses; their names are their own.
func TestParsedConfigsShareTheirRepeatedStrings(t *testing.T) {
	a, b := testJob("a", 1), testJob("b", 1)
	da, err := ejserver.MarshalElasticJobYAML(a)
	if err != nil {
		t.Fatal(err)
	}
	db, err := ejserver.MarshalElasticJobYAML(b)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := parseConfig("a", da)
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC() // the values outlive a collection (unique's table alone holds them weakly)
	runtime.GC()
	cb, err := parseConfig("b", db)
	if err != nil {
		t.Fatal(err)
	}
	same := func(x, y string) bool { return unsafe.StringData(x) == unsafe.StringData(y) }
	if ca.Cron != cb.Cron || !same(ca.Cron, cb.Cron) || !same(ca.Webhook.URL, cb.Webhook.URL) ||
		!same(ca.ShardingItemParameters, cb.ShardingItemParameters) {
		t.Fatalf("equal strings not shared: cron %q/%q", ca.Cron, cb.Cron)
	}
	if ca.JobName != "a" || cb.JobName != "b" {
		t.Fatalf("names %q, %q", ca.JobName, cb.JobName)
	}
}
