package cluster

// A JobRef is a job's entry in the registry, for a reader that reads the job at every one of its fires (the
// scheduler hands each fire off with it) and need not look its name up in the map of every job each time. At
// 100,000 jobs that lookup misses the cache: the lookups by name were 4-8 % of a steady-100000 peer's CPU
// (docs/benchmarks.md, "A fire's job found through its scheduler entry"). The zero JobRef is no entry.
type JobRef struct{ e *jobEntry }

// Ref is the entry this snapshot was made from (zero for a snapshot the registry did not make).
func (s *JobSnapshot) Ref() JobRef { return JobRef{s.entry} }

// JobAt is Job(name) read through ref, the job's entry when ref was taken: its current snapshot, or nil for a
// job not loaded or without a config. An entry that has left the registry (its job was deleted, and maybe
// created again under a new entry since) is never read: the job is then looked up by its name, as is a zero
// ref. ref must be name's (JobSnapshot.Ref of a snapshot of name).
func (r *Registry) JobAt(name string, ref JobRef) *JobSnapshot {
	e := ref.e
	if e == nil {
		return r.Job(name)
	}
	e.mu.Lock()
	if !e.detached {
		defer e.mu.Unlock()
		return r.snapshotOfLocked(e)
	}
	e.mu.Unlock()
	return r.Job(name)
}

// snapshotOfLocked is e's current snapshot, nil for a job not loaded or without a config (e.mu held).
func (r *Registry) snapshotOfLocked(e *jobEntry) *JobSnapshot {
	if !e.st.loaded || !e.st.hasConfig {
		return nil
	}
	return e.snapshotLocked(r.me)
}
