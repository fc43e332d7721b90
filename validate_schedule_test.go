package ejserver

import (
	"errors"
	"strings"
	"testing"

	"github.com/ejserver/ejserver/internal/schedule"
)

// decodeJob decodes a job's JSON over validJob's required fields, normalised as the API does.
func decodeJob(t *testing.T, extra string) (JobConfig, error) {
	t.Helper()
	body := `{"jobName":"j","cron":"0/5 * * * * ?","shardingTotalCount":2,"webhook":{"url":"http://127.0.0.1:1/h"}` + extra + `}`
	c, err := DecodeJobConfig(strings.NewReader(body))
	if err != nil {
		t.Fatalf("decode %s: %v", body, err)
	}
	c.Normalize()
	return c, c.Validate()
}

func TestScheduleFieldsDefaultToElasticJob(t *testing.T) {
	c, err := decodeJob(t, "")
	if err != nil {
		t.Fatal(err)
	}
	if c.Overlap() != schedule.BufferOne || c.CatchUpMode() != schedule.CatchUpNone || c.JitterMs != 0 || !c.Misfire {
		t.Fatalf("defaults: overlap %s catchUp %s jitter %d misfire %t", c.Overlap(), c.CatchUpMode(), c.JitterMs, c.Misfire)
	}
	for extra, want := range map[string]schedule.Overlap{`,"misfire":false`: schedule.Skip, `,"misfire":true`: schedule.BufferOne} {
		c, err := decodeJob(t, extra)
		if err != nil || c.Overlap() != want {
			t.Errorf("%s: overlap %s, %v; want %s", extra, c.Overlap(), err, want)
		}
	}
	c, err = decodeJob(t, `,"replayMissedFires":true`)
	if err != nil || c.CatchUpMode() != schedule.CatchUpLast {
		t.Errorf("replayMissedFires: catchUp %s, %v; want last", c.CatchUpMode(), err)
	}
}

func TestScheduleFieldsAccepted(t *testing.T) {
	for extra, check := range map[string]func(JobConfig) bool{
		`,"overlapPolicy":"skip"`:                            func(c JobConfig) bool { return c.Overlap() == schedule.Skip && !c.Misfire },
		`,"overlapPolicy":"ALLOW"`:                           func(c JobConfig) bool { return c.Overlap() == schedule.Allow && !c.Misfire },
		`,"overlapPolicy":"CANCEL_PREVIOUS","misfire":false`: func(c JobConfig) bool { return c.Overlap() == schedule.CancelPrevious },
		`,"overlapPolicy":"BUFFER_ONE","misfire":true`:       func(c JobConfig) bool { return c.Misfire },
		`,"catchUp":"ALL","catchUpWindowSeconds":600`:        func(c JobConfig) bool { return c.CatchUpMode() == schedule.CatchUpAll },
		`,"catchUp":"last","replayMissedFires":true`:         func(c JobConfig) bool { return c.CatchUpMode() == schedule.CatchUpLast },
		`,"jitterMs":30000`:                                  func(c JobConfig) bool { return c.JitterMs == 30000 },
	} {
		c, err := decodeJob(t, extra)
		if err != nil || !check(c) {
			t.Errorf("%s: %+v, %v", extra, c, err)
		}
	}
}

func TestScheduleFieldsRefused(t *testing.T) {
	for extra, field := range map[string]string{
		`,"overlapPolicy":"REPLACE"`:                     "overlapPolicy",
		`,"overlapPolicy":"SKIP","misfire":true`:         "overlapPolicy",
		`,"overlapPolicy":"BUFFER_ONE","misfire":false`:  "overlapPolicy",
		`,"overlapPolicy":"ALLOW","misfire":true`:        "overlapPolicy",
		`,"catchUp":"some"`:                              "catchUp",
		`,"catchUp":"all","replayMissedFires":true`:      "catchUp",
		`,"catchUp":"none","replayMissedFires":true`:     "catchUp",
		`,"catchUpWindowSeconds":60`:                     "catchUpWindowSeconds",
		`,"catchUp":"all","catchUpWindowSeconds":-1`:     "catchUpWindowSeconds",
		`,"catchUp":"all","catchUpWindowSeconds":999999`: "catchUpWindowSeconds",
		`,"jitterMs":-1`:                                 "jitterMs",
		`,"jitterMs":3600001`:                            "jitterMs",
	} {
		_, err := decodeJob(t, extra)
		var e *Error
		if !errors.As(err, &e) || len(e.Fields) != 1 || e.Fields[0].Field != field || e.Fields[0].Message == "" {
			t.Errorf("%s: %v, want one error on %s", extra, err, field)
		}
	}
}

func TestScheduleFieldsSurviveElasticJobYAML(t *testing.T) {
	c, err := decodeJob(t, `,"overlapPolicy":"CANCEL_PREVIOUS","catchUp":"all","catchUpWindowSeconds":90,"jitterMs":1500`)
	if err != nil {
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
	if got.OverlapPolicy != "CANCEL_PREVIOUS" || got.CatchUp != "all" || got.CatchUpWindowSeconds != 90 || got.JitterMs != 1500 || got.Misfire {
		t.Fatalf("round trip lost fields: %+v", got)
	}
	if err := got.Validate(); err != nil {
		t.Fatalf("a stored job no longer validates: %v", err)
	}
}
