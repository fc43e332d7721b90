package api

import (
	"context"
	"reflect"
	"testing"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/audit"
)

// configOnly is a Service that answers JobConfig alone: any other method is the nil interface's, and panics.
type configOnly struct {
	Service
	cfgs map[string]ejserver.JobConfig
}

func (s configOnly) JobConfig(_ context.Context, name string) (ejserver.JobConfig, error) {
	cfg, ok := s.cfgs[name]
	if !ok {
		return cfg, ejserver.Errorf(ejserver.ENOTFOUND, "job %q not found", name)
	}
	return cfg, nil
}

// TestAuditFieldsReadTheConfigOnly: the before and after of a job's change are its config, read without the
// job's view (GetJob adds three history queries for its statistics: a registration of 10,000 jobs spent ~35 %
// of a peer's CPU on them, one view per creation's audit entry). A job not found has no fields.
func TestAuditFieldsReadTheConfigOnly(t *testing.T) {
	cfg := ejserver.DefaultJobConfig()
	cfg.JobName, cfg.Cron, cfg.ShardingTotalCount = "settle", "0 * * * * ?", 2
	cfg.Webhook.URL, cfg.Webhook.Secret = "http://127.0.0.1:9/hook", "whsec_not-shown"
	a := &auditor{svc: configOnly{cfgs: map[string]ejserver.JobConfig{"settle": cfg}}}
	for _, action := range []audit.Action{audit.JobCreate, audit.JobReplace, audit.JobDelete, audit.JobEnable,
		audit.JobDisable, audit.JobPause, audit.JobResume} {
		got, ok := a.fields(context.Background(), action, audit.Entry{Job: "settle"})
		if !ok || !reflect.DeepEqual(got, audit.JobFields(cfg)) {
			t.Errorf("%s: fields %v (%v), want the config's", action, got, ok)
		}
		if _, ok := a.fields(context.Background(), action, audit.Entry{Job: "absent"}); ok {
			t.Errorf("%s: a job not found has fields", action)
		}
	}
}
