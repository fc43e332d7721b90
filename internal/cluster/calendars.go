package cluster

import (
	"errors"
	"strings"

	"github.com/go-zookeeper/zk"
)

// Errors of the calendar and fire-counter writes.
var (
	// ErrNoCalendar: no calendar node of that name.
	ErrNoCalendar = errors.New("no such calendar")
	// ErrCalendarExists: a calendar of that name exists already.
	ErrCalendarExists = errors.New("a calendar of that name exists")
	// ErrCalendarChanged: the calendar node was written since the version the caller gave.
	ErrCalendarChanged = errors.New("the calendar changed meanwhile")
	// ErrCounterChanged: a job's fire counter was written (or created) since it was read.
	ErrCounterChanged = errors.New("the fire counter changed meanwhile")
)

// Calendars is the meta folder of the cluster's named calendars, one node per calendar (issue 24).
func (p Paths) Calendars() string { return p.Meta() + "/calendars" }

// Calendar is one calendar's node. Only a validated calendar name reaches it.
func (p Paths) Calendar(name string) string { return p.Calendars() + "/" + name }

// FireCounters is the meta folder of the jobs' remainingFires counters.
func (p Paths) FireCounters() string { return p.Meta() + "/fire-counters" }

// FireCounter is one job's remainingFires counter node.
func (p Paths) FireCounter(job string) string { return p.FireCounters() + "/" + job }

// CalendarNode is one calendar's node.
type CalendarNode = MetaNode

// onCalendarWatch handles a watch event under the calendars folder; it reports whether the path was one.
func (r *Registry) onCalendarWatch(pth string) bool {
	folder := r.p.Calendars()
	if pth != folder && !strings.HasPrefix(pth, folder+"/") {
		return false
	}
	r.calw.fire()
	return true
}

// CalendarNodes reads every calendar node, by name. With watch it watches the folder and each node: the
// returned channel is closed on the first change (or when the watches are lost with the session).
func (r *Registry) CalendarNodes(watch bool) ([]CalendarNode, <-chan struct{}, error) {
	return r.metaNodes("calendar", r.p.Calendars(), r.p.Calendar, &r.calw, watch)
}

// ReadCalendar reads one calendar node now (not from a cache): ErrNoCalendar if there is none.
func (r *Registry) ReadCalendar(name string) (CalendarNode, error) {
	data, st, err := r.s.get(r.p.Calendar(name))
	if errors.Is(err, zk.ErrNoNode) {
		return CalendarNode{}, ErrNoCalendar
	}
	if err != nil {
		return CalendarNode{}, err
	}
	return CalendarNode{Name: name, Data: data, Version: st.Version}, nil
}

// CreateCalendar creates a calendar node (ErrCalendarExists if there is one).
func (r *Registry) CreateCalendar(name string, data []byte) (int32, error) {
	if err := r.s.ensurePath(r.p.Calendars()); err != nil {
		return -1, err
	}
	err := r.s.create(r.p.Calendar(name), data, 0)
	if errors.Is(err, zk.ErrNodeExists) {
		return -1, ErrCalendarExists
	}
	if err != nil {
		return -1, err
	}
	return 0, nil
}

// SetCalendar replaces a calendar node if it still has version (-1: any version); the new version is
// returned.
func (r *Registry) SetCalendar(name string, data []byte, version int32) (int32, error) {
	st, err := r.s.set(r.p.Calendar(name), data, version)
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return -1, ErrNoCalendar
	case errors.Is(err, zk.ErrBadVersion):
		return -1, ErrCalendarChanged
	case err != nil:
		return -1, err
	}
	return st.Version, nil
}

// DeleteCalendar removes a calendar node if it still has version (-1: any version).
func (r *Registry) DeleteCalendar(name string, version int32) error {
	err := r.s.del(r.p.Calendar(name), version)
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return ErrNoCalendar
	case errors.Is(err, zk.ErrBadVersion):
		return ErrCalendarChanged
	}
	return err
}

// ReadFireCounter reads a job's remainingFires counter: its data and version, or version -1 when there is
// none yet.
func (r *Registry) ReadFireCounter(job string) ([]byte, int32, error) {
	data, st, err := r.s.get(r.p.FireCounter(job))
	if errors.Is(err, zk.ErrNoNode) {
		return nil, -1, nil
	}
	if err != nil {
		return nil, -1, err
	}
	return data, st.Version, nil
}

// WriteFireCounter writes a job's counter conditionally: created when version is -1 (ErrCounterChanged if
// another peer created it first), else set if it still has version (ErrCounterChanged if not). The
// condition is what makes one fire count once across peers.
func (r *Registry) WriteFireCounter(job string, data []byte, version int32) error {
	var err error
	if version < 0 {
		if err = r.s.ensurePath(r.p.FireCounters()); err != nil {
			return err
		}
		err = r.s.create(r.p.FireCounter(job), data, 0)
	} else {
		_, err = r.s.set(r.p.FireCounter(job), data, version)
	}
	if errors.Is(err, zk.ErrNodeExists) || errors.Is(err, zk.ErrBadVersion) || errors.Is(err, zk.ErrNoNode) {
		return ErrCounterChanged
	}
	return err
}
