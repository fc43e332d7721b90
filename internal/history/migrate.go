package history

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
)

// The schema's versions, one file per version and dialect: migrations/{sqlite,postgres}/NNNN_name.sql, the
// same versions in both. Open runs the pending ones in one transaction, together with the schema_migrations
// rows that record them. Migrations must stay compatible with the previous release (add, don't rename or
// drop), because peers upgrade one at a time; a peer that finds a newer schema logs a warning and goes on.
//
//go:embed migrations
var migrationFS embed.FS

type migration struct {
	version int
	name    string
	sql     string
}

// migrations returns the dialect's migrations in version order.
func migrations(dialect string) ([]migration, error) {
	dir := path.Join("migrations", dialect)
	entries, err := fs.ReadDir(migrationFS, dir)
	if err != nil {
		return nil, fmt.Errorf("read %s migrations: %w", dialect, err)
	}
	var out []migration
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".sql") {
			continue
		}
		num, name, ok := strings.Cut(strings.TrimSuffix(e.Name(), ".sql"), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %s: name must be NNNN_name.sql", e.Name())
		}
		b, err := fs.ReadFile(migrationFS, path.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		out = append(out, migration{version: v, name: name, sql: string(b)})
	}
	slices.SortFunc(out, func(a, b migration) int { return a.version - b.version })
	for i := 1; i < len(out); i++ {
		if out[i].version == out[i-1].version {
			return nil, fmt.Errorf("two %s migrations have version %d", dialect, out[i].version)
		}
	}
	return out, nil
}

// pending returns the migrations whose version is not in applied, and the highest applied version.
func pending(all []migration, applied []int) ([]migration, int) {
	highest := 0
	for _, v := range applied {
		highest = max(highest, v)
	}
	var out []migration
	for _, m := range all {
		if !slices.Contains(applied, m.version) {
			out = append(out, m)
		}
	}
	return out, highest
}

// migrationLockKey is the pg_advisory_xact_lock key that serialises ejserver's migrations on one database.
const migrationLockKey int64 = 0x656a686973746f72 // "ejhistor"
