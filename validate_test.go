package ejserver

import (
	"reflect"
	"strings"
	"testing"
)

func validJob() JobConfig {
	c := DefaultJobConfig()
	c.JobName = "settle.daily_v2-eu"
	c.Cron = "0/5 * * * * ?"
	c.ShardingTotalCount = 3
	c.ShardingItemParameters = "0=A,1=B,2=C"
	c.Webhook.URL = "https://hooks.example.com/settle?x=1"
	return c
}

func TestValidateAcceptsAGoodJob(t *testing.T) {
	for _, mod := range []func(*JobConfig){
		func(c *JobConfig) {},
		func(c *JobConfig) { c.Cron = "" }, // one-off
		func(c *JobConfig) { c.Cron = "*/5 * * * *"; c.TimeZone = "GMT+8" },
		func(c *JobConfig) { c.Cron = "@every 30s"; c.TimeZone = "Asia/Shanghai" },
		func(c *JobConfig) { c.JobType = JobTypeDataflow; c.StreamingProcess = true },
		func(c *JobConfig) { c.Webhook.Secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" },
		func(c *JobConfig) { c.Webhook.Headers = map[string]string{"Authorization": "Bearer x"} },
		func(c *JobConfig) { c.JobErrorHandlerType = "EMAIL" },
		func(c *JobConfig) {
			c.Alerts = Alerts{FailedFiresInARow: 3, LateAfterMs: 500, Rules: []AlertRule{{On: []string{EventFailedFiresInARow, EventLate}, Channels: []string{"ops.slack"}}}}
			c.Hooks = Hooks{BeforeFire: "http://127.0.0.1:1/b", AfterFire: "https://h/a"}
		},
	} {
		c := validJob()
		mod(&c)
		if err := c.Validate(); err != nil {
			t.Errorf("%+v: %v", c, err)
		}
	}
}

func TestValidateNamesTheField(t *testing.T) {
	tests := []struct {
		name  string
		mod   func(*JobConfig)
		field string
		msg   string
	}{
		{"empty name", func(c *JobConfig) { c.JobName = "" }, "jobName", "required"},
		{"slash", func(c *JobConfig) { c.JobName = "a/b" }, "jobName", "letters"},
		{"dot dot", func(c *JobConfig) { c.JobName = ".." }, "jobName", "start with"},
		{"control", func(c *JobConfig) { c.JobName = "a\x01" }, "jobName", "letters"},
		{"long", func(c *JobConfig) { c.JobName = strings.Repeat("a", 129) }, "jobName", "limit is 128"},
		{"cron", func(c *JobConfig) { c.Cron = "0 0 25 * * ?" }, "cron", "hour"},
		{"cron fields", func(c *JobConfig) { c.Cron = "* * *" }, "cron", ""},
		{"zone", func(c *JobConfig) { c.TimeZone = "Mars/Olympus" }, "timeZone", ""},
		{"total 0", func(c *JobConfig) { c.ShardingTotalCount = 0 }, "shardingTotalCount", "between 1 and"},
		{"total huge", func(c *JobConfig) { c.ShardingTotalCount = MaxShardingTotalCount + 1 }, "shardingTotalCount", ""},
		{"params entry", func(c *JobConfig) { c.ShardingItemParameters = "0=A,1" }, "shardingItemParameters", `entry "1"`},
		{"params key", func(c *JobConfig) { c.ShardingItemParameters = "x=A" }, "shardingItemParameters", "whole number"},
		{"params range", func(c *JobConfig) { c.ShardingItemParameters = "5=A" }, "shardingItemParameters", "outside 0..2"},
		{"params dup", func(c *JobConfig) { c.ShardingItemParameters = "1=A,1=B" }, "shardingItemParameters", "twice"},
		{"no url", func(c *JobConfig) { c.Webhook.URL = "" }, "webhook.url", "required"},
		{"ftp", func(c *JobConfig) { c.Webhook.URL = "ftp://x/y" }, "webhook.url", "http or https"},
		{"no host", func(c *JobConfig) { c.Webhook.URL = "http:///x" }, "webhook.url", "no host"},
		{"userinfo", func(c *JobConfig) { c.Webhook.URL = "https://u:p@h/x" }, "webhook.url", "credentials"},
		{"method", func(c *JobConfig) { c.Webhook.Method = "DELETE" }, "webhook.method", "POST"},
		{"header host", func(c *JobConfig) { c.Webhook.Headers = map[string]string{"Host": "evil"} }, "webhook.headers.Host", "can't be overridden"},
		{"header webhook-id", func(c *JobConfig) { c.Webhook.Headers = map[string]string{"Webhook-Id": "x"} }, "webhook.headers.Webhook-Id", ""},
		{"header crlf", func(c *JobConfig) { c.Webhook.Headers = map[string]string{"X-A": "a\r\nB: c"} }, "webhook.headers.X-A", "one line"},
		{"header del", func(c *JobConfig) { c.Webhook.Headers = map[string]string{"X-A": "a\x7fb"} }, "webhook.headers.X-A", "control characters"},
		{"header bell", func(c *JobConfig) { c.Webhook.Headers = map[string]string{"X-A": "a\x07b"} }, "webhook.headers.X-A", "control characters"},
		{"header name", func(c *JobConfig) { c.Webhook.Headers = map[string]string{"X A": "a"} }, "webhook.headers.X A", "not a valid"},
		{"timeout", func(c *JobConfig) { c.Webhook.TimeoutMs = 0 }, "webhook.timeoutMs", ""},
		{"secret", func(c *JobConfig) { c.Webhook.Secret = "hunter2" }, "webhook.secret", "whsec_"},
		{"secret short", func(c *JobConfig) { c.Webhook.Secret = "whsec_AAAA" }, "webhook.secret", "bytes"},
		{"retry", func(c *JobConfig) { c.Retry.MaxAttempts = 0 }, "retry.maxAttempts", ""},
		{"backoff order", func(c *JobConfig) { c.Retry.InitialBackoffMs = 5000; c.Retry.MaxBackoffMs = 10 }, "retry.maxBackoffMs", ""},
		{"failover needs monitor", func(c *JobConfig) { c.Failover = true; c.MonitorExecution = false }, "failover", "monitorExecution"},
		{"strategy", func(c *JobConfig) { c.JobShardingStrategyType = "HASH" }, "jobShardingStrategyType", ""},
		{"handler", func(c *JobConfig) { c.JobErrorHandlerType = "SMS" }, "jobErrorHandlerType", "EMAIL"},
		{"rule kind", func(c *JobConfig) {
			c.Alerts.Rules = []AlertRule{{On: []string{"BROKEN"}, Channels: []string{"ops"}}}
		}, "alerts.rules[0].on[0]", "not an event"},
		{"rule no event", func(c *JobConfig) { c.Alerts.Rules = []AlertRule{{Channels: []string{"ops"}}} }, "alerts.rules[0].on", "no event"},
		{"rule no channel", func(c *JobConfig) { c.Alerts.Rules = []AlertRule{{On: []string{EventItemFailed}}} }, "alerts.rules[0].channels", "no channel"},
		{"rule channel name", func(c *JobConfig) {
			c.Alerts.Rules = []AlertRule{{On: []string{EventItemFailed}, Channels: []string{"a b"}}}
		}, "alerts.rules[0].channels[0]", "channel name"},
		{"late needs threshold", func(c *JobConfig) {
			c.Alerts.Rules = []AlertRule{{On: []string{EventLate}, Channels: []string{"ops"}}}
		}, "alerts.rules[0].on[0]", "lateAfterMs"},
		{"quiet", func(c *JobConfig) {
			c.Alerts.Rules = []AlertRule{{On: []string{EventItemFailed}, Channels: []string{"ops"}, QuietPeriodSeconds: -1}}
		}, "alerts.rules[0].quietPeriodSeconds", "between"},
		{"in a row", func(c *JobConfig) { c.Alerts.FailedFiresInARow = -1 }, "alerts.failedFiresInARow", "between"},
		{"hook url", func(c *JobConfig) { c.Hooks.AfterFire = "ftp://x/y" }, "hooks.afterFire", "http or https"},
		{"hook creds", func(c *JobConfig) { c.Hooks.BeforeFire = "https://u:p@h/x" }, "hooks.beforeFire", "credentials"},
		{"streaming simple", func(c *JobConfig) { c.StreamingProcess = true }, "streamingProcess", "DATAFLOW"},
		{"job type", func(c *JobConfig) { c.JobType = "SCRIPT" }, "jobType", ""},
		{"reserved prop", func(c *JobConfig) { c.Props = map[string]string{"http.uri": "x"} }, "props.http.uri", "reserved"},
		{"time diff", func(c *JobConfig) { c.MaxTimeDiffSeconds = -2 }, "maxTimeDiffSeconds", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := validJob()
			tt.mod(&c)
			err := c.Validate()
			e, ok := err.(*Error)
			if !ok || e.Code != EINVALID {
				t.Fatalf("err = %v", err)
			}
			if e.Field() != tt.field || !strings.Contains(e.Fields[0].Message, tt.msg) {
				t.Fatalf("field %q message %q, want %q containing %q", e.Field(), e.Fields[0].Message, tt.field, tt.msg)
			}
		})
	}
}

func TestValidateListsEveryField(t *testing.T) {
	c := validJob()
	c.JobName, c.ShardingTotalCount, c.Webhook.URL = "", 0, ""
	e := c.Validate().(*Error)
	var fields []string
	for _, f := range e.Fields {
		fields = append(fields, f.Field)
	}
	if !reflect.DeepEqual(fields, []string{"jobName", "shardingTotalCount", "webhook.url"}) {
		t.Fatalf("fields %v", fields)
	}
}

// The rules are ElasticJob's ShardingItemParameters; the Java behaviour of each case was checked with
// String.split, which drops trailing empty strings.
func TestParseShardingItemParameters(t *testing.T) {
	tests := []struct {
		in      string
		want    map[int]string
		wantErr bool
	}{
		{"", map[int]string{}, false},
		{"0=A,1=B,2=C", map[int]string{0: "A", 1: "B", 2: "C"}, false},
		{" 0 = Beijing , 1=Shanghai ", map[int]string{0: "Beijing", 1: "Shanghai"}, false},
		{"0=A,", map[int]string{0: "A"}, false},
		{"0=A,,", map[int]string{0: "A"}, false},
		{"0=A=", map[int]string{0: "A"}, false},
		{"0=", nil, true},
		{"=A", nil, true},
		{"0=A=B", nil, true},
		{",0=A", nil, true},
		{"0=A,,1=B", nil, true},
		{"a=A", nil, true},
		{"-1=A", nil, true},
		{"3=A", nil, true},
		{"1=A,1=B", nil, true},
	}
	for _, tt := range tests {
		got, err := ParseShardingItemParameters(tt.in, 3)
		if (err != nil) != tt.wantErr || (!tt.wantErr && !reflect.DeepEqual(got, tt.want)) {
			t.Errorf("%q: got %v, %v", tt.in, got, err)
		}
	}
}

func TestDecodeJobConfig(t *testing.T) {
	cfg, err := DecodeJobConfig(strings.NewReader(`{"jobName":"j","cron":"","shardingTotalCount":2,"webhook":{"url":"http://h/x","secret":""}}`))
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.Misfire || !cfg.MonitorExecution || cfg.Webhook.Method != "POST" || cfg.Webhook.TimeoutMs != DefaultTimeoutMs ||
		cfg.MaxTimeDiffSeconds != -1 || cfg.ReconcileIntervalMinutes != 10 || !cfg.Webhook.SecretGiven() {
		t.Fatalf("defaults not kept: %+v", cfg)
	}
	for body, field := range map[string]string{
		`{"jobName":"j","sharding":2}`:                    "sharding",
		`{"jobName":"j","webhook":{"url":"x","uri":"y"}}`: "webhook.uri",
		`{"jobName":5}`:              "jobName",
		`{"shardingTotalCount":"3"}`: "shardingTotalCount",
		`{"jobName":"j"} {"x":1}`:    "body",
		`{"jobName":`:                "body",
		``:                           "body",
	} {
		_, err := DecodeJobConfig(strings.NewReader(body))
		e, ok := err.(*Error)
		if !ok || e.Field() != field {
			t.Errorf("%s: err %v, want field %s", body, err, field)
		}
	}
}

func TestWebhookJSONNeverHoldsASecret(t *testing.T) {
	c := validJob()
	c.Webhook.Secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	c.Webhook.PreviousSecret = "whsec_previous"
	b, err := jsonMarshal(c)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	if strings.Contains(s, "whsec_") || !strings.Contains(s, `"hasSecret":true`) || !strings.Contains(s, `"secretRotating":true`) {
		t.Fatalf("JSON: %s", s)
	}
}

func FuzzShardingItemParameters(f *testing.F) {
	for _, s := range []string{"", "0=A,1=B", " 0 = x ,", "0=A=B", "=", ",,", "1=\u00e9", "99999999999999999999=A"} {
		f.Add(s, 3)
	}
	f.Fuzz(func(t *testing.T, s string, total int) {
		got, err := ParseShardingItemParameters(s, total)
		if err != nil {
			return
		}
		for k := range got {
			if k < 0 || (total > 0 && k >= total) {
				t.Fatalf("item %d accepted with total %d", k, total)
			}
		}
	})
}

func FuzzDecodeJobConfig(f *testing.F) {
	for _, s := range []string{
		`{"jobName":"j","cron":"0/5 * * * * ?","shardingTotalCount":3,"webhook":{"url":"http://h/x"}}`,
		`{"jobName":"j","webhook":{"url":"http://h/x","headers":{"A":"b"},"generateSecret":true}}`,
		`{"props":{"a":"b"},"retry":{"maxAttempts":2}}`, `[]`, `{"webhook":null}`, `{"jobName":"\u0000"}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cfg, err := DecodeJobConfig(strings.NewReader(s))
		if err != nil {
			if e, ok := err.(*Error); !ok || e.Code != EINVALID || e.Field() == "" {
				t.Fatalf("decode error is not a field error: %#v", err)
			}
			return
		}
		cfg.Normalize()
		if err := cfg.Validate(); err != nil {
			if e, ok := err.(*Error); !ok || e.Field() == "" {
				t.Fatalf("validation error is not a field error: %#v", err)
			}
			return
		}
		// a valid job survives its storage format
		b, err := MarshalElasticJobYAML(cfg)
		if err != nil {
			t.Fatal(err)
		}
		back, err := ParseElasticJobYAML(b)
		if err != nil {
			t.Fatalf("stored config does not parse: %v\n%s", err, b)
		}
		cfg.Webhook.GenerateSecret = false
		back.Webhook.GenerateSecret = false
		if !reflect.DeepEqual(stripSet(back), stripSet(cfg)) {
			t.Fatalf("round trip changed the job:\n got %+v\nwant %+v", back, cfg)
		}
	})
}

func stripSet(c JobConfig) JobConfig {
	c.Webhook.secretSet = false
	if len(c.Props) == 0 {
		c.Props = nil
	}
	if len(c.Webhook.Headers) == 0 {
		c.Webhook.Headers = nil
	}
	return c
}
