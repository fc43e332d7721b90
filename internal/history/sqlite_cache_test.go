package history

import "testing"

// TestSQLiteWriterCache checks the writer connection's page cache (sqliteWriterCache) and that the readers
// keep SQLite's default.
func TestSQLiteWriterCache(t *testing.T) {
	t.Parallel()
	s := openStore(t, "sqlite").(*sqliteStore)
	var w, r int
	if err := s.w.QueryRowContext(testCtx(t), "PRAGMA cache_size").Scan(&w); err != nil {
		t.Fatal(err)
	}
	if err := s.r.QueryRowContext(testCtx(t), "PRAGMA cache_size").Scan(&r); err != nil {
		t.Fatal(err)
	}
	if w != -32768 {
		t.Errorf("the writer's cache_size is %d, want -32768 (32 MB)", w)
	}
	if r != -2000 {
		t.Errorf("a reader's cache_size is %d, want SQLite's default -2000", r)
	}
}
