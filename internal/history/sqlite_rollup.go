package history

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"slices"

	"github.com/ejserver/ejserver/internal/history/rollup"
)

// SQLite keeps the stats' rollup in the writing transaction, aggregated per batch (migration 0011 dropped
// 0009/0010's per-row triggers): WriteExecutions reads the old versions of the rows its upsert replaces and
// gets the new ones back from the upsert (RETURNING; a batch none of whose rows the frontier counts, old or new,
// changes no cell and is upserted without it), Prune gets the rows it deletes back from the delete, and
// rollup applies rollup.Aggregate's deltas, one upsert per cell rather than six a row. These are the
// only statements that write JOB_EXECUTION_LOG; PostgreSQL keeps its triggers (for the rows behind its
// frontier: postgres_frontier.go).

// rollupColumns are the columns of JOB_EXECUTION_LOG the rollup counts, in rollupScan's order.
const rollupColumns = `job_name, instance_id, start_time, scheduled_at, complete_time IS NOT NULL, is_success, ` +
	`execution_source, duration_ms, hostname, ip`

// rollupScan scans rollupColumns (after the id, withID) into one Row through destinations made once, so that
// reading a batch's or a minute's rows makes nothing a row but the driver's values.
type rollupScan struct {
	id               string
	r                rollup.Row
	sched            sql.NullInt64
	source, host, ip sql.NullString
	dest             []any
}

func newRollupScan(withID bool) *rollupScan {
	s := &rollupScan{}
	if withID {
		s.dest = append(s.dest, &s.id)
	}
	s.dest = append(s.dest, &s.r.Job, &s.r.Instance, &s.r.Start, &s.sched, &s.r.Done, &s.r.Success, &s.source,
		&s.r.DurationMs, &s.host, &s.ip)
	return s
}

// scan scans rows' current row: its id (withID) and what the rollup counts of it.
func (s *rollupScan) scan(rows *sql.Rows) (string, rollup.Row, error) {
	if err := rows.Scan(s.dest...); err != nil {
		return "", rollup.Row{}, err
	}
	r := s.r
	r.Scheduled, r.HasScheduled = s.sched.Int64, s.sched.Valid
	r.Source, r.Hostname, r.IP = s.source.String, s.host.String, s.ip.String
	return s.id, r, nil
}

// eachRollupRow calls fn with each row of a statement returning rollupColumns (after the id, withID; "" without
// it), and closes rows.
func eachRollupRow(rows *sql.Rows, err error, withID bool, fn func(id string, r rollup.Row)) error {
	if err != nil {
		return err
	}
	defer func() { _ = rows.Close() }()
	sc := newRollupScan(withID)
	for rows.Next() {
		id, r, err := sc.scan(rows)
		if err != nil {
			return err
		}
		fn(id, r)
	}
	return rows.Err()
}

// queryJSON runs the prepared statement named stmt with its one argument, arg encoded as JSON (the statement
// reads it with json_each), in tx.
func (s *sqliteStore) queryJSON(ctx context.Context, tx *sql.Tx, stmt string, arg any) (*sql.Rows, error) {
	js, err := json.Marshal(arg)
	if err != nil {
		return nil, err
	}
	return tx.StmtContext(ctx, s.prepared[stmtKey{stmt, 1}]).QueryContext(ctx, string(js))
}

// storedRollupRows reads the rows of ids that are stored, by id.
func (s *sqliteStore) storedRollupRows(ctx context.Context, tx *sql.Tx, ids []string) (map[string]rollup.Row, error) {
	rows, err := s.queryJSON(ctx, tx, "stored rows", ids)
	out := make(map[string]rollup.Row, len(ids))
	return out, eachRollupRow(rows, err, true, func(id string, r rollup.Row) { out[id] = r })
}

// rollup applies the rollup's change when the rows removed went and the rows added came, in tx (after
// the rows were written, so that the fires' rows and the cells' largest values are read as they now are):
// of the rows its frontier f has counted; the others change no cell (sqlite_frontier.go).
func (s *sqliteStore) rollup(ctx context.Context, tx *sql.Tx, f rollup.Frontier, removed, added []rollup.Row) error {
	if s.noRollup || len(removed) == 0 && len(added) == 0 {
		return nil
	}
	removed, added = f.Filter(removed), f.Filter(added)
	if len(removed) == 0 && len(added) == 0 {
		return nil
	}
	d := rollup.Aggregate(removed, added)
	after, err := s.fireRows(ctx, tx, d.Changed())
	if err != nil {
		return err
	}
	d.Fires(after)
	return s.applyRollup(ctx, tx, d, f)
}

// applyRollup writes the change d of the rollup's cells in tx, each table's cells in their key's order; f is
// how far the rollup counts (a largest value read again is read off the rows it counts). Each table's rows go
// into one slice of arguments, reused from table to table.
func (s *sqliteStore) applyRollup(ctx context.Context, tx *sql.Tx, d rollup.Delta, f rollup.Frontier) error {
	cells := sortedKeys(d.Cells, func(a, b rollup.CellKey) int {
		return cmp.Or(cmp.Compare(a.Minute, b.Minute), cmp.Compare(a.Job, b.Job), cmp.Compare(a.Instance, b.Instance))
	}) // in the key's order (0014: the minute first)
	args := make([]any, 0, max(len(cells)*rollupCellUpsert.width, len(d.Hist)*rollupHistUpsert.width))
	for _, k := range cells {
		args = appendCounts(append(args, k.Job, k.Minute, k.Instance), d.Cells[k])
	}
	if err := s.upsertRows(ctx, tx, rollupCellUpsert, args); err != nil {
		return err
	}
	peers := sortedKeys(d.PeerCells, func(a, b rollup.PeerKey) int {
		return cmp.Or(cmp.Compare(a.Minute, b.Minute), cmp.Compare(a.Instance, b.Instance))
	})
	args = args[:0]
	for _, k := range peers {
		args = appendCounts(append(args, k.Minute, k.Instance), d.PeerCells[k])
	}
	if err := s.upsertRows(ctx, tx, rollupPeerUpsert, args); err != nil {
		return err
	}

	// A removed largest value: the largest left, read off the cell's rows, then the peer's off the minute's
	// rows; only where the stored largest (the added ones in) is not above the removed one.
	for _, k := range cells {
		c := d.Cells[k]
		if c.ReadDurMax() {
			if _, err := tx.ExecContext(ctx, `UPDATE EXECUTION_STATS_MINUTE SET dur_max = (SELECT MAX(e.duration_ms)
				FROM JOB_EXECUTION_LOG e INDEXED BY job_execution_log_job_start WHERE e.job_name = ?1
				AND e.start_time >= ?2 * 60000000 AND e.start_time < (?2 + 1) * 60000000 AND e.instance_id = ?3
				AND e.complete_time IS NOT NULL)
				WHERE job_name = ?1 AND minute = ?2 AND instance_id = ?3 AND dur_max <= ?4`,
				k.Job, k.Minute, k.Instance, c.RemovedDur.V); err != nil {
				return err
			}
		}
		if c.ReadLateMax() {
			if _, err := tx.ExecContext(ctx, `UPDATE EXECUTION_STATS_MINUTE SET late_max = (SELECT MAX((e.start_time - e.scheduled_at) / 1000)
				FROM JOB_EXECUTION_LOG e INDEXED BY job_execution_log_job_start WHERE e.job_name = ?1
				AND e.start_time >= ?2 * 60000000 AND e.start_time < (?2 + 1) * 60000000 AND e.instance_id = ?3
				AND e.scheduled_at IS NOT NULL)
				WHERE job_name = ?1 AND minute = ?2 AND instance_id = ?3 AND late_max <= ?4`,
				k.Job, k.Minute, k.Instance, c.RemovedLate.V); err != nil {
				return err
			}
		}
	}
	for _, k := range peers {
		c := d.PeerCells[k]
		if c.ReadDurMax() {
			if _, err := tx.ExecContext(ctx, sqlitePeerDurMax, k.Minute, k.Instance, c.RemovedDur.V, f.Minute, f.Job); err != nil {
				return err
			}
		}
		if c.ReadLateMax() {
			if _, err := tx.ExecContext(ctx, sqlitePeerLateMax, k.Minute, k.Instance, c.RemovedLate.V, f.Minute, f.Job); err != nil {
				return err
			}
		}
	}

	args = args[:0]
	for _, k := range sortedKeys(d.JobFires, func(a, b rollup.JobMinute) int {
		return cmp.Or(cmp.Compare(a.Minute, b.Minute), cmp.Compare(a.Job, b.Job))
	}) {
		args = append(args, k.Job, k.Minute, d.JobFires[k])
	}
	if err := s.upsertRows(ctx, tx, rollupFiresUpsert, args); err != nil {
		return err
	}
	args = args[:0]
	for _, m := range sortedKeys(d.ClusterFires, cmp.Compare[int64]) {
		args = append(args, m, d.ClusterFires[m])
	}
	if err := s.upsertRows(ctx, tx, rollupClusterFiresUpsert, args); err != nil {
		return err
	}
	args = args[:0]
	for _, k := range sortedKeys(d.Hist, func(a, b rollup.HistKey) int {
		return cmp.Or(cmp.Compare(a.Hour, b.Hour), cmp.Compare(a.Job, b.Job), cmp.Compare(a.Instance, b.Instance),
			cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Bin, b.Bin))
	}) {
		args = append(args, k.Job, k.Hour, k.Instance, k.Kind, k.Bin, d.Hist[k])
	}
	if err := s.upsertRows(ctx, tx, rollupHistUpsert, args); err != nil {
		return err
	}
	args = args[:0]
	for _, k := range sortedKeys(d.PeerHist, func(a, b rollup.PeerHistKey) int {
		return cmp.Or(cmp.Compare(a.Hour, b.Hour), cmp.Compare(a.Instance, b.Instance), cmp.Compare(a.Kind, b.Kind),
			cmp.Compare(a.Bin, b.Bin))
	}) {
		args = append(args, k.Hour, k.Instance, k.Kind, k.Bin, d.PeerHist[k])
	}
	return s.upsertRows(ctx, tx, rollupPeerHistUpsert, args)
}

// sortedKeys is m's keys in cmp's order, in a slice made once.
func sortedKeys[K comparable, V any](m map[K]V, cmp func(a, b K) int) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, cmp)
	return keys
}

// fireRows reads how many rows each fire of keys has in its minute, per peer.
func (s *sqliteStore) fireRows(ctx context.Context, tx *sql.Tx, keys []rollup.FireKey) (map[rollup.FirePeer]int64, error) {
	out := make(map[rollup.FirePeer]int64, len(keys))
	if len(keys) == 0 {
		return out, nil
	}
	arg := make([][3]any, len(keys))
	for i, k := range keys {
		arg[i] = [3]any{k.Job, k.Minute, k.Scheduled}
	}
	rows, err := s.queryJSON(ctx, tx, "fire rows", arg)
	if err != nil {
		return nil, err
	}
	defer func() { _ = rows.Close() }()
	for rows.Next() {
		var (
			i    int
			inst string
			n    int64
		)
		if err := rows.Scan(&i, &inst, &n); err != nil {
			return nil, err
		}
		out[rollup.FirePeer{FireKey: keys[i], Instance: inst}] = n
	}
	return out, rows.Err()
}

// appendCounts appends a minute cell's values after its key to args, in rollupCellUpsert's order.
func appendCounts(args []any, c *rollup.Counts) []any {
	nullMax := func(m rollup.Max) any {
		if !m.Set {
			return nil
		}
		return m.V
	}
	return append(args, c.PeerFires, c.Items, c.Success, c.Failure, c.Running, c.Misfire, c.Failover, c.Manual,
		c.DurN, c.DurSum, nullMax(c.DurMax), c.LateN, c.LateSum, nullMax(c.LateMax), c.Hostname, c.IP)
}

// rollupUpsert is a multi-row upsert of one rollup table: the statement for n rows of width values.
type rollupUpsert struct {
	table, head, tuple, tail string
	width                    int
}

func (u rollupUpsert) sql(n int) string { return u.head + repeatTuple(u.tuple, n) + u.tail }

// rollupCounts is a minute cell's counts: what is added, the largest values, the largest hostname and ip.
const rollupCounts = ` DO UPDATE SET peer_fires = peer_fires + excluded.peer_fires,
	items = items + excluded.items, success = success + excluded.success, failure = failure + excluded.failure,
	running = running + excluded.running, misfire = misfire + excluded.misfire,
	failover = failover + excluded.failover, manual = manual + excluded.manual,
	dur_n = dur_n + excluded.dur_n, dur_sum = dur_sum + excluded.dur_sum,
	dur_max = CASE WHEN dur_max IS NULL OR excluded.dur_max > dur_max THEN excluded.dur_max ELSE dur_max END,
	late_n = late_n + excluded.late_n, late_sum = late_sum + excluded.late_sum,
	late_max = CASE WHEN late_max IS NULL OR excluded.late_max > late_max THEN excluded.late_max ELSE late_max END,
	hostname = MAX(hostname, excluded.hostname), ip = MAX(ip, excluded.ip)`

var (
	rollupCellUpsert = rollupUpsert{"EXECUTION_STATS_MINUTE", `INSERT INTO EXECUTION_STATS_MINUTE (job_name, minute, instance_id, peer_fires,
		items, success, failure, running, misfire, failover, manual, dur_n, dur_sum, dur_max, late_n, late_sum,
		late_max, hostname, ip) VALUES `, "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
		` ON CONFLICT (minute, job_name, instance_id)` + rollupCounts, 19}
	rollupPeerUpsert = rollupUpsert{"EXECUTION_PEER_STATS_MINUTE", `INSERT INTO EXECUTION_PEER_STATS_MINUTE (minute, instance_id, peer_fires,
		items, success, failure, running, misfire, failover, manual, dur_n, dur_sum, dur_max, late_n, late_sum,
		late_max, hostname, ip) VALUES `, "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
		` ON CONFLICT (minute, instance_id)` + rollupCounts, 18}
	rollupFiresUpsert = rollupUpsert{"EXECUTION_FIRES_MINUTE", `INSERT INTO EXECUTION_FIRES_MINUTE (job_name, minute, fires) VALUES `,
		"(?, ?, ?)", ` ON CONFLICT (minute, job_name) DO UPDATE SET fires = fires + excluded.fires`, 3}
	rollupClusterFiresUpsert = rollupUpsert{"EXECUTION_CLUSTER_FIRES_MINUTE", `INSERT INTO EXECUTION_CLUSTER_FIRES_MINUTE (minute, fires) VALUES `,
		"(?, ?)", ` ON CONFLICT (minute) DO UPDATE SET fires = fires + excluded.fires`, 2}
	rollupHistUpsert = rollupUpsert{"EXECUTION_STATS_HIST", `INSERT INTO EXECUTION_STATS_HIST (job_name, hour, instance_id, kind, bin, n) VALUES `,
		"(?, ?, ?, ?, ?, ?)", ` ON CONFLICT (hour, job_name, instance_id, kind, bin) DO UPDATE SET n = n + excluded.n`, 6}
	rollupPeerHistUpsert = rollupUpsert{"EXECUTION_PEER_STATS_HIST", `INSERT INTO EXECUTION_PEER_STATS_HIST (hour, instance_id, kind, bin, n) VALUES `,
		"(?, ?, ?, ?, ?)", ` ON CONFLICT (hour, instance_id, kind, bin) DO UPDATE SET n = n + excluded.n`, 5}
)

// upsertRows runs u for the rows whose values are args (u.width a row), in statements of a power of two rows
// (at most rollupChunk), each prepared once.
func (s *sqliteStore) upsertRows(ctx context.Context, tx *sql.Tx, u rollupUpsert, args []any) error {
	for rows := len(args) / u.width; rows > 0; rows = len(args) / u.width {
		n := rollupChunk
		for n > rows {
			n /= 2
		}
		if _, err := tx.StmtContext(ctx, s.prepared[stmtKey{u.table, n}]).ExecContext(ctx, args[:n*u.width]...); err != nil {
			return err
		}
		args = args[n*u.width:]
	}
	return nil
}

// rollupChunk is the most rows of one rollup upsert.
const rollupChunk = 64

// The rollup's reads.
const (
	// sqlitePeerDurMax and sqlitePeerLateMax read a peer cell's largest duration and lateness again (?1 the
	// minute, ?2 the peer, ?3 the removed value, ?4 and ?5 the frontier's minute and job: of the minute's rows
	// those the rollup counts), off the minute's rows through the start-ordered covering
	// index: migration 0013 dropped the indexes of the job cells' largest values that this read alone needed
	// (every new cell and every larger value wrote a leaf of them), for a range scan of one minute's rows
	// when a removal took a peer's largest value (a prune, an end shorter than the record it replaced).
	sqlitePeerDurMax = `UPDATE EXECUTION_PEER_STATS_MINUTE SET dur_max = (SELECT MAX(e.duration_ms)
		FROM JOB_EXECUTION_LOG e INDEXED BY job_execution_log_start
		WHERE e.start_time >= ?1 * 60000000 AND e.start_time < (?1 + 1) * 60000000 AND e.instance_id = ?2
		AND e.complete_time IS NOT NULL AND (?1 < ?4 OR e.job_name <= ?5))
		WHERE minute = ?1 AND instance_id = ?2 AND dur_max <= ?3`
	sqlitePeerLateMax = `UPDATE EXECUTION_PEER_STATS_MINUTE SET late_max = (SELECT MAX((e.start_time - e.scheduled_at) / 1000)
		FROM JOB_EXECUTION_LOG e INDEXED BY job_execution_log_start
		WHERE e.start_time >= ?1 * 60000000 AND e.start_time < (?1 + 1) * 60000000 AND e.instance_id = ?2
		AND e.scheduled_at IS NOT NULL AND (?1 < ?4 OR e.job_name <= ?5))
		WHERE minute = ?1 AND instance_id = ?2 AND late_max <= ?3`
	sqliteStoredRows = `SELECT id, ` + rollupColumns + ` FROM JOB_EXECUTION_LOG WHERE id IN (SELECT value FROM json_each(?))`
	sqliteFireRows   = `SELECT f.key, e.instance_id, COUNT(*) FROM json_each(?) f
		JOIN JOB_EXECUTION_LOG e INDEXED BY job_execution_log_fire ON e.job_name = json_extract(f.value, '$[0]')
		AND e.scheduled_at = json_extract(f.value, '$[2]') AND e.start_time >= json_extract(f.value, '$[1]') * 60000000
		AND e.start_time < (json_extract(f.value, '$[1]') + 1) * 60000000
		GROUP BY f.key, e.instance_id`
)

// rollupUpserts are the rollup's upserts.
var rollupUpserts = []rollupUpsert{rollupCellUpsert, rollupPeerUpsert, rollupFiresUpsert, rollupClusterFiresUpsert,
	rollupHistUpsert, rollupPeerHistUpsert}
