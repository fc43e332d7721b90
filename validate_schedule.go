package ejserver

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/ejserver/ejserver/internal/schedule"
)

// The schedule-steering fields of issue 24's part S1 (overlapPolicy, catchUp, catchUpWindowSeconds,
// jitterMs): their normalisation, validation and ElasticJob props, beside the rest of JobConfig's.

// Props keeping the schedule-steering fields in ElasticJob's config (absent: the field's default).
const (
	PropOverlapPolicy = "ejserver.overlapPolicy"
	PropCatchUp       = "ejserver.catchUp"
	PropCatchUpWindow = "ejserver.catchUpWindowSeconds"
	PropJitterMs      = "ejserver.jitterMs"
)

// misfirePresent reports whether a job's JSON sets misfire itself.
func misfirePresent(body []byte) bool {
	var probe struct {
		Misfire *bool `json:"misfire"`
	}
	return json.Unmarshal(body, &probe) == nil && probe.Misfire != nil
}

// SetMisfireGiven marks misfire as set by the caller (a client building a JobConfig in Go rather than
// decoding JSON), so that a misfire disagreeing with overlapPolicy is refused rather than overridden.
func (c *JobConfig) SetMisfireGiven() { c.misfireSet = true }

// Overlap is the job's effective overlap policy (overlapPolicy, or what misfire means).
func (c *JobConfig) Overlap() schedule.Overlap {
	return schedule.EffectiveOverlap(c.OverlapPolicy, c.Misfire)
}

// CatchUpMode is the job's effective catch-up mode (catchUp, or what replayMissedFires means).
func (c *JobConfig) CatchUpMode() schedule.CatchUp {
	return schedule.EffectiveCatchUp(c.CatchUp, c.ReplayMissedFires)
}

func (c *JobConfig) normalizeSchedule() {
	c.OverlapPolicy = strings.ToUpper(strings.TrimSpace(c.OverlapPolicy))
	c.CatchUp = strings.ToLower(strings.TrimSpace(c.CatchUp))
	if p := schedule.Overlap(c.OverlapPolicy); p.Valid() && !c.misfireSet {
		c.Misfire = schedule.MisfireOf(p) // misfire left at its default follows the policy
	}
}

func (c *JobConfig) validateSchedule(v *validator) {
	if c.OverlapPolicy != "" && !schedule.Overlap(c.OverlapPolicy).Valid() {
		v.add("overlapPolicy", "must be BUFFER_ONE, SKIP, ALLOW or CANCEL_PREVIOUS (or empty: misfire decides), got %q", c.OverlapPolicy)
	} else if msg := schedule.OverlapConflict(c.OverlapPolicy, c.Misfire, c.misfireSet); msg != "" {
		v.add("overlapPolicy", "%s", msg)
	}
	if c.CatchUp != "" && !schedule.CatchUp(c.CatchUp).Valid() {
		v.add("catchUp", "must be none, last or all (or empty: replayMissedFires decides), got %q", c.CatchUp)
	} else if field, msg := schedule.CatchUpConflict(c.CatchUp, c.ReplayMissedFires, c.CatchUpWindowSeconds); field != "" {
		v.add(field, "%s", msg)
	}
	v.between("catchUpWindowSeconds", c.CatchUpWindowSeconds, 0, schedule.MaxCatchUpWindowSeconds)
	v.between("jitterMs", c.JitterMs, 0, schedule.MaxJitterMs)
}

// scheduleProps writes the schedule-steering fields into ElasticJob props (only those that are set).
func (c *JobConfig) scheduleProps(props map[string]string) {
	for k, v := range map[string]string{PropOverlapPolicy: c.OverlapPolicy, PropCatchUp: c.CatchUp} {
		if v != "" {
			props[k] = v
		}
	}
	for k, n := range map[string]int{PropCatchUpWindow: c.CatchUpWindowSeconds, PropJitterMs: c.JitterMs} {
		if n != 0 {
			props[k] = strconv.Itoa(n)
		}
	}
}

// takeScheduleProps reads the schedule-steering fields back from ElasticJob props.
func (c *JobConfig) takeScheduleProps(take func(string) (string, bool), takeInt func(string, *int)) {
	if v, ok := take(PropOverlapPolicy); ok {
		c.OverlapPolicy = strings.ToUpper(strings.TrimSpace(v))
	}
	if v, ok := take(PropCatchUp); ok {
		c.CatchUp = strings.ToLower(strings.TrimSpace(v))
	}
	takeInt(PropCatchUpWindow, &c.CatchUpWindowSeconds)
	takeInt(PropJitterMs, &c.JitterMs)
}
