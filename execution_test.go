package ejserver

import (
	"strings"
	"testing"

	"github.com/google/uuid"
)

// TestTaskIDUniqueIsTimeOrdered checks ElasticJob's task id format and that its unique part is a UUIDv7, so
// that the ids of later tasks sort after earlier ones (the SQLite history's task index is keyed by it).
func TestTaskIDUniqueIsTimeOrdered(t *testing.T) {
	prev := ""
	for i := range 200 {
		id := TaskID("pay", []int{0, 2}, i%2 == 1, "10.0.0.7@-@4242")
		parts := strings.Split(id, "@-@")
		kind := map[bool]string{false: "READY", true: "FAILOVER"}[i%2 == 1]
		if len(parts) != 6 || parts[0] != "pay" || parts[1] != "0,2" || parts[2] != kind || parts[3] != "10.0.0.7" || parts[4] != "4242" {
			t.Fatalf("task id %q: want pay@-@0,2@-@%s@-@10.0.0.7@-@4242@-@{unique}", id, kind)
		}
		u, err := uuid.Parse(parts[5])
		if err != nil || u.Version() != 7 || len(parts[5]) != 36 {
			t.Fatalf("unique of %q: version %v, %v; want a UUIDv7 of 36 characters", id, u.Version(), err)
		}
		if parts[5] <= prev {
			t.Fatalf("unique %s after %s: want later tasks' uniques to sort after earlier ones'", parts[5], prev)
		}
		prev = parts[5]
	}
}
