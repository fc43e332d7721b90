package service

import (
	"strings"
	"testing"

	"github.com/ejserver/ejserver"
)

func decode(t *testing.T, js string) ejserver.JobConfig {
	t.Helper()
	cfg, err := ejserver.DecodeJobConfig(strings.NewReader(js))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Normalize()
	return cfg
}

func TestSameConfig(t *testing.T) {
	stored := decode(t, `{"jobName":"a","cron":"@hourly","shardingTotalCount":2,"webhook":{"url":"http://h/x","secret":"whsec_c2VjcmV0"}}`)
	stored.Webhook.PreviousSecret = "whsec_b2xk"
	tests := []struct {
		name string
		want string
		same bool
	}{
		{"no secret keeps it", `{"jobName":"a","cron":"@hourly","shardingTotalCount":2,"webhook":{"url":"http://h/x"}}`, true},
		{"same secret", `{"jobName":"a","cron":"@hourly","shardingTotalCount":2,"webhook":{"url":"http://h/x","secret":"whsec_c2VjcmV0"}}`, true},
		{"explicit defaults", `{"jobName":"a","cron":"@hourly","shardingTotalCount":2,"misfire":true,"webhook":{"url":"http://h/x","method":"post"}}`, true},
		{"other secret", `{"jobName":"a","cron":"@hourly","shardingTotalCount":2,"webhook":{"url":"http://h/x","secret":"whsec_b3RoZXI="}}`, false},
		{"secret removed", `{"jobName":"a","cron":"@hourly","shardingTotalCount":2,"webhook":{"url":"http://h/x","secret":""}}`, false},
		{"other cron", `{"jobName":"a","cron":"@daily","shardingTotalCount":2,"webhook":{"url":"http://h/x"}}`, false},
		{"disabled", `{"jobName":"a","cron":"@hourly","shardingTotalCount":2,"disabled":true,"webhook":{"url":"http://h/x"}}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := sameConfig(stored, decode(t, tt.want)); got != tt.same {
				t.Fatalf("sameConfig = %v, want %v", got, tt.same)
			}
		})
	}
}
