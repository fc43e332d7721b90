package async

import (
	"fmt"

	"github.com/ejserver/ejserver/internal/lease"
)

// CancelLease ends an accepted execution's lease as CANCELLED with cause (a later fire's overlapPolicy
// CANCEL_PREVIOUS): its running node is released and its end recorded as for any ended lease, and its
// receiver learns it from the answer to its next heartbeat (409 execution-cancelled). A lease that has ended
// already is left as it is.
func (m *Manager) CancelLease(executionID, cause string) error {
	if _, err := m.apply(executionID, func() lease.Event {
		return lease.Event{Kind: lease.Cancel, At: m.clk.Now(), Cause: cause}
	}, nil); err != nil {
		return fmt.Errorf("cancel the lease of execution %s: %w", executionID, err)
	}
	return nil
}
