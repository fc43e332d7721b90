package engine

import "github.com/ejserver/ejserver/internal/workflow"

// RunListener is told of the runs the duty holder follows (the workflows' alerts): every run it writes that
// started, ended or was retried, and, when it takes the duty, every run it loads, active or ended (so a run
// that ended while the duty moved is told too). It may be told of one run twice; it must not block.
type RunListener interface {
	RunChanged(r workflow.Run)
}

// tell hands a run to the listener, if there is one.
func (d *duty) tell(r workflow.Run) {
	if l := d.e.cfg.Listener; l != nil {
		l.RunChanged(r)
	}
}
