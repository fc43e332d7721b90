package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"

	"gopkg.in/yaml.v3"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/audit"
	"github.com/ejserver/ejserver/internal/service"
)

// jobEntry is one job of a declarative jobs file.
type jobEntry struct {
	// Pos names the entry in errors: "jobs.yaml:12 (job 2, settle)".
	Pos string
	// JSON is the entry as the API's JSON: what `job apply` sends.
	JSON []byte
	// Config is the entry decoded and validated exactly as the API does it.
	Config ejserver.JobConfig
}

// maxJobsFile bounds a jobs file (10,000 jobs of a typical size fit).
const maxJobsFile = 64 << 20

// readJobsFile reads a YAML (or JSON) list of jobs in the API's JSON shape. Each entry is converted to JSON
// and decoded by ejserver.DecodeJobConfig, so defaults, unknown-field and type errors are the API's own;
// errors name the file, line, entry and field.
func readJobsFile(path string) ([]jobEntry, error) {
	doc, err := readJobsDoc(path)
	return doc.Jobs, err
}

// readJobsDoc reads a jobs file with its workflows (jobsfile_workflows.go).
func readJobsDoc(path string) (jobsDoc, error) {
	st, err := os.Stat(path)
	if err != nil {
		return jobsDoc{}, err
	}
	if st.Size() > maxJobsFile {
		return jobsDoc{}, fmt.Errorf("%s: larger than %d MiB", path, maxJobsFile>>20)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return jobsDoc{}, err
	}
	return parseJobsDoc(path, b)
}

func parseJobsFile(path string, b []byte) ([]jobEntry, error) {
	doc, err := parseJobsDoc(path, b)
	return doc.Jobs, err
}

// parseJobList reads the jobs of a jobs file: a YAML list of jobs in the API's JSON shape.
func parseJobList(path string, list *yaml.Node) ([]jobEntry, error) {
	if list.Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("%s:%d: want a list of jobs (each starting with \"- jobName: ...\")", path, list.Line)
	}
	out := make([]jobEntry, 0, len(list.Content))
	seen := map[string]string{}
	err := eachEntry(path, list, "job", "jobName", "(jobName, cron, ...)", func(pos string, m map[string]any) error {
		js, err := json.Marshal(m)
		if err != nil {
			return fmt.Errorf("%s: %v", pos, err)
		}
		cfg, err := ejserver.DecodeJobConfig(bytes.NewReader(js))
		if err == nil {
			cfg.Normalize()
			err = cfg.Validate()
		}
		if err != nil {
			return fmt.Errorf("%s: %s", pos, fieldMessage(err))
		}
		if prev, dup := seen[cfg.JobName]; dup {
			return fmt.Errorf("%s: jobName: %q is also at %s", pos, cfg.JobName, prev)
		}
		seen[cfg.JobName] = pos
		out = append(out, jobEntry{Pos: pos, JSON: js, Config: cfg})
		return nil
	})
	return out, err
}

// eachEntry decodes each entry of a list as a mapping of fields and hands it on with its position in errors,
// "jobs.yaml:12 (job 2, settle)": the entry's line, kind, number and, if set, the value of nameKey.
func eachEntry(path string, list *yaml.Node, kind, nameKey, fields string, fn func(pos string, m map[string]any) error) error {
	for i, node := range list.Content {
		pos := fmt.Sprintf("%s:%d (%s %d)", path, node.Line, kind, i+1)
		var v any
		if err := node.Decode(&v); err != nil {
			return fmt.Errorf("%s: %v", pos, err)
		}
		m, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: a %s must be a mapping of fields %s", pos, kind, fields)
		}
		if name, ok := m[nameKey].(string); ok && name != "" {
			pos = fmt.Sprintf("%s:%d (%s %d, %s)", path, node.Line, kind, i+1, name)
		}
		if err := fn(pos, m); err != nil {
			return err
		}
	}
	return nil
}

// fieldMessage is "field: message" for every offending field of an *ejserver.Error.
func fieldMessage(err error) string {
	var e *ejserver.Error
	if !errors.As(err, &e) || len(e.Fields) == 0 {
		return err.Error()
	}
	var buf bytes.Buffer
	for i, f := range e.Fields {
		if i > 0 {
			buf.WriteString("; ")
		}
		fmt.Fprintf(&buf, "%s: %s", f.Field, f.Message)
	}
	return buf.String()
}

// applyJobs applies `serve --jobs` at start-up with ElasticJob's overwrite semantics (service.ApplyJob).
// A job it creates or replaces is recorded in the audit trail (actor jobs-file) with its difference.
func applyJobs(ctx context.Context, svc *service.Service, jobs []jobEntry, rec *audit.Recorder, log *slog.Logger) error {
	counts := map[string]int{}
	for _, j := range jobs {
		var before map[string]audit.Field
		if v, err := svc.GetJob(ctx, j.Config.JobName); err == nil {
			before = audit.JobFields(v.JobConfig)
		}
		what, err := svc.ApplyJob(ctx, j.Config)
		if err != nil {
			return fmt.Errorf("--jobs: %s: %s", j.Pos, fieldMessage(err))
		}
		counts[what]++
		if what == service.ApplyCreated || what == service.ApplyReplaced {
			e := audit.Entry{Actor: "jobs-file", ActorKind: audit.ActorJobsFile, Action: audit.JobsFileApply,
				Job: j.Config.JobName, Detail: fmt.Sprintf("job %s from %s", what, j.Pos)}
			if v, err := svc.GetJob(ctx, j.Config.JobName); err == nil {
				e.Changes = audit.Diff(before, audit.JobFields(v.JobConfig))
			}
			_ = rec.Record(ctx, e)
		}
		log.Info("jobs file: job "+what, "job", j.Config.JobName)
	}
	if len(jobs) > 0 {
		log.Info("jobs file applied", "jobs", len(jobs), "created", counts[service.ApplyCreated], "replaced", counts[service.ApplyReplaced],
			"unchanged", counts[service.ApplyUnchanged], "kept", counts[service.ApplyKept])
	}
	return nil
}
