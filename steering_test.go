package ejserver

import (
	"reflect"
	"testing"
	"time"
)

func TestValidateSteeringNamesTheField(t *testing.T) {
	tests := []struct {
		name  string
		edit  func(*JobConfig)
		field string
	}{
		{"bad calendar name", func(c *JobConfig) { c.ExcludeCalendars = []string{"a/b"} }, "excludeCalendars[0]"},
		{"twice", func(c *JobConfig) { c.IncludeCalendars = []string{"a", "a"} }, "includeCalendars[1]"},
		{"both", func(c *JobConfig) { c.IncludeCalendars, c.ExcludeCalendars = []string{"a"}, []string{"a"} }, "includeCalendars"},
		{"too many", func(c *JobConfig) { c.ExcludeCalendars = make([]string, MaxJobCalendars+1) }, "excludeCalendars"},
		{"endAt not RFC 3339", func(c *JobConfig) { c.EndAt = "2026-12-31" }, "endAt"},
		{"remainingFires negative", func(c *JobConfig) { c.RemainingFires = -1 }, "remainingFires"},
		{"remainingFires without cron", func(c *JobConfig) { c.Cron, c.RemainingFires = "", 3 }, "remainingFires"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := validJob()
			tt.edit(&c)
			err := c.Validate()
			e, ok := err.(*Error)
			if !ok {
				t.Fatalf("Validate = %v, want a field error", err)
			}
			for _, f := range e.Fields {
				if f.Field == tt.field {
					return
				}
			}
			t.Fatalf("fields %+v do not name %q", e.Fields, tt.field)
		})
	}
}

func TestSteeringYAMLRoundTrip(t *testing.T) {
	c := validJob()
	c.Normalize()
	c.ExcludeCalendars, c.IncludeCalendars = []string{"cn-holidays", "eu"}, []string{"workdays"}
	c.EndAt, c.RemainingFires = "2027-01-01T00:00:00+08:00", 12
	c.Pause = &Pause{By: "ops", Note: "receiver migration", At: time.Date(2026, 11, 24, 18, 0, 0, 0, time.UTC)}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	b, err := MarshalElasticJobYAML(c)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseElasticJobYAML(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.ExcludeCalendars, c.ExcludeCalendars) || !reflect.DeepEqual(got.IncludeCalendars, c.IncludeCalendars) ||
		got.EndAt != c.EndAt || got.RemainingFires != 12 || got.Pause == nil || *got.Pause != *c.Pause {
		t.Fatalf("round trip = %+v %+v %q %d %+v", got.ExcludeCalendars, got.IncludeCalendars, got.EndAt, got.RemainingFires, got.Pause)
	}
	if !got.EndTime().Equal(time.Date(2026, 12, 31, 16, 0, 0, 0, time.UTC)) {
		t.Fatalf("EndTime = %v", got.EndTime())
	}
}

// A job without endAt, nearly every job, gets its end time without an allocation: every fire asks.
func TestEndTimeUnsetAllocatesNothing(t *testing.T) {
	var cfg JobConfig
	if allocs := testing.AllocsPerRun(100, func() {
		if !cfg.EndTime().IsZero() {
			t.Fatal("an unset endAt has an end time")
		}
	}); allocs != 0 {
		t.Fatalf("%.1f allocations", allocs)
	}
}
