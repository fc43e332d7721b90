package ejserver

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

// The sample is ElasticJob's own config node, exactly as it stores it (reference/elasticjob.md).
const elasticJobSample = `cron: 0/1 * * * * ?
description: Job description
disabled: false
failover: false
jobErrorHandlerType: IGNORE
jobExecutorThreadPoolSizeProviderType: CPU
jobName: test_job
jobParameter: param
jobShardingStrategyType: AVG_ALLOCATION
maxTimeDiffSeconds: -1
misfire: false
monitorExecution: false
overwrite: false
props:
  key: value
  http.uri: http://10.0.0.5:8080/run
  http.connect.timeout.milliseconds: 1500
reconcileIntervalMinutes: 0
shardingItemParameters: 0=A,1=B,2=C
shardingTotalCount: 3
staticSharding: false
`

func TestParseElasticJobSample(t *testing.T) {
	cfg, err := ParseElasticJobYAML([]byte(elasticJobSample))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.JobName != "test_job" || cfg.Cron != "0/1 * * * * ?" || cfg.ShardingTotalCount != 3 ||
		cfg.Misfire || cfg.MonitorExecution || cfg.JobErrorHandlerType != "IGNORE" || cfg.ReconcileIntervalMinutes != 0 {
		t.Fatalf("parsed %+v", cfg)
	}
	if cfg.Webhook.URL != "http://10.0.0.5:8080/run" || cfg.Webhook.ConnectTimeoutMs != 1500 || cfg.Webhook.TimeoutMs != DefaultTimeoutMs {
		t.Fatalf("webhook %+v", cfg.Webhook)
	}
	if !reflect.DeepEqual(cfg.Props, map[string]string{"key": "value"}) {
		t.Fatalf("props %v", cfg.Props)
	}
}

func TestElasticJobYAMLRoundTrip(t *testing.T) {
	cfg := DefaultJobConfig()
	cfg.JobName = "settle"
	cfg.Cron = "0 0/5 * * * ?"
	cfg.TimeZone = "GMT+8"
	cfg.ShardingTotalCount = 4
	cfg.ShardingItemParameters = "0=Beijing,1=Shanghai"
	cfg.JobType = JobTypeDataflow
	cfg.StreamingProcess = true
	cfg.Webhook.URL = "https://hooks.example.com/settle"
	cfg.Webhook.Headers = map[string]string{"X-Team": "payments"}
	cfg.Webhook.Secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	cfg.Webhook.PreviousSecret = "whsec_old"
	cfg.Webhook.PreviousSecretExpiresAt = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	cfg.Retry = RetryPolicy{MaxAttempts: 5, InitialBackoffMs: 200, MaxBackoffMs: 9000}
	cfg.MaxConcurrentRequests = 7
	cfg.ReplayMissedFires = true
	cfg.Props = map[string]string{"owner": "team-a"}
	cfg.Alerts = Alerts{FailedFiresInARow: 2, RunningLongerThanSeconds: 60, Rules: []AlertRule{
		{On: []string{EventFireFailed, EventRecovered}, Channels: []string{"ops", "pd"}, QuietPeriodSeconds: 300}}}
	cfg.Hooks = Hooks{BeforeFire: "https://hooks.example.com/before", AfterFire: "https://hooks.example.com/after"}
	b, err := MarshalElasticJobYAML(cfg)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	for _, want := range []string{"jobName: settle\n", "shardingTotalCount: 4\n", "  http.uri: https://hooks.example.com/settle\n",
		"  http.method: POST\n", "  streaming.process: \"true\"\n", "disabled: false\n", "maxTimeDiffSeconds: -1\n"} {
		if !strings.Contains(text, want) {
			t.Errorf("YAML lacks %q:\n%s", want, text)
		}
	}
	if strings.Index(text, "cron:") > strings.Index(text, "jobName:") {
		t.Errorf("keys are not alphabetical:\n%s", text)
	}
	back, err := ParseElasticJobYAML(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, cfg) {
		t.Fatalf("round trip changed the config:\n got %+v\nwant %+v", back, cfg)
	}
}

func TestParseElasticJobYAMLRejectsBadProps(t *testing.T) {
	_, err := ParseElasticJobYAML([]byte("jobName: j\nshardingTotalCount: 1\nprops:\n  http.read.timeout.milliseconds: soon\n"))
	if err == nil || !strings.Contains(err.Error(), "http.read.timeout.milliseconds") {
		t.Fatalf("err = %v", err)
	}
}
