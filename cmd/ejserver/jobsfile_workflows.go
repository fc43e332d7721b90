package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/audit"
	"github.com/ejserver/ejserver/internal/service"
	"github.com/ejserver/ejserver/internal/workflow"
	"github.com/ejserver/ejserver/internal/workflow/engine"
)

// jobsDoc is a jobs file: either a list of jobs (the first form), or a mapping with a jobs list and a
// workflows list, so the workflows that chain the jobs live in the same file (and the same review) as the
// jobs they reference.
type jobsDoc struct {
	Jobs      []jobEntry
	Workflows []workflowEntry
}

// workflowEntry is one workflow of a jobs file.
type workflowEntry struct {
	// Pos names the entry in errors: "jobs.yaml:30 (workflow 1, nightly)".
	Pos string
	// Overwrite: replace a stored workflow that differs (as a job's overwrite: true).
	Overwrite bool
	Workflow  workflow.Workflow
}

func parseJobsDoc(path string, b []byte) (jobsDoc, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return jobsDoc{}, fmt.Errorf("%s: not YAML: %v", path, err)
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return jobsDoc{}, nil // an empty file: no jobs
	}
	top := doc.Content[0]
	if top.Kind != yaml.MappingNode {
		jobs, err := parseJobList(path, top)
		return jobsDoc{Jobs: jobs}, err
	}
	var out jobsDoc
	for i := 0; i+1 < len(top.Content); i += 2 {
		key, val := top.Content[i], top.Content[i+1]
		var err error
		switch key.Value {
		case "jobs":
			out.Jobs, err = parseJobList(path, val)
		case "workflows":
			out.Workflows, err = parseWorkflowList(path, val)
		default:
			err = fmt.Errorf("%s:%d: want a list of jobs, or a mapping with the sections jobs and workflows (%q is neither)", path, key.Line, key.Value)
		}
		if err != nil {
			return jobsDoc{}, err
		}
	}
	return out, nil
}

// parseWorkflowList reads the workflows section: each entry in the API's JSON shape (POST
// /api/v1/workflows), plus overwrite. Errors name the file, line, entry and field (which names the node).
func parseWorkflowList(path string, list *yaml.Node) ([]workflowEntry, error) {
	if list.Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("%s:%d: workflows: want a list of workflows (each starting with \"- name: ...\")", path, list.Line)
	}
	out := make([]workflowEntry, 0, len(list.Content))
	seen := map[string]string{}
	err := eachEntry(path, list, "workflow", "name", "(name, cron, nodes, ...)", func(pos string, m map[string]any) error {
		e := workflowEntry{Pos: pos}
		if ow, ok := m["overwrite"]; ok {
			if e.Overwrite, ok = ow.(bool); !ok {
				return fmt.Errorf("%s: overwrite: must be true or false", pos)
			}
			delete(m, "overwrite")
		}
		js, err := json.Marshal(m)
		if err != nil {
			return fmt.Errorf("%s: %v", pos, err)
		}
		if err := decodeStrict(js, &e.Workflow); err != nil {
			return fmt.Errorf("%s: %s", pos, fieldMessage(err))
		}
		e.Workflow.Normalize()
		if err := workflow.Validate(e.Workflow, nil); err != nil { // the jobs are checked at apply
			return fmt.Errorf("%s: %s", pos, fieldMessage(err))
		}
		if prev, dup := seen[e.Workflow.Name]; dup {
			return fmt.Errorf("%s: name: %q is also at %s", pos, e.Workflow.Name, prev)
		}
		seen[e.Workflow.Name] = pos
		out = append(out, e)
		return nil
	})
	return out, err
}

// decodeStrict decodes JSON refusing unknown fields, as the API does.
func decodeStrict(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	var te *json.UnmarshalTypeError
	var e *ejserver.Error
	switch {
	case err == nil, errors.As(err, &e):
		return err
	case errors.As(err, &te):
		return ejserver.Invalid(te.Field, "has the wrong type (%s)", te.Value)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return ejserver.Invalid(strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`), "unknown field")
	}
	return ejserver.Invalid("body", "%v", err)
}

// checkWorkflowJobs refuses, before anything is stored, a workflow whose node names a job that is neither in
// the file nor in the cluster: the file's order does not matter.
func checkWorkflowJobs(doc jobsDoc, exists func(string) bool) error {
	inFile := map[string]bool{}
	for _, j := range doc.Jobs {
		inFile[j.Config.JobName] = true
	}
	for _, e := range doc.Workflows {
		err := workflow.Validate(e.Workflow, func(job string) bool { return inFile[job] || exists(job) })
		if err != nil {
			return fmt.Errorf("--jobs: %s: %s", e.Pos, fieldMessage(err))
		}
	}
	return nil
}

// Workflows is what the jobs file's workflows need of the workflow service (engine.Service satisfies it).
type Workflows interface {
	Get(ctx context.Context, name string) (engine.Stored, error)
	Create(ctx context.Context, w workflow.Workflow) (engine.Stored, error)
	Replace(ctx context.Context, name string, w workflow.Workflow, version int32) (engine.Stored, error)
}

// applyWorkflows applies the file's workflows after its jobs, with the jobs' overwrite semantics: a missing
// workflow is created, an existing one replaced only with overwrite: true and when it differs. Each change is
// in the audit trail (actor jobs-file).
func applyWorkflows(ctx context.Context, wfs Workflows, entries []workflowEntry, rec *audit.Recorder, log *slog.Logger) error {
	counts := map[string]int{}
	for _, e := range entries {
		what, err := applyWorkflow(ctx, wfs, e)
		if err != nil {
			return fmt.Errorf("--jobs: %s: %s", e.Pos, fieldMessage(err))
		}
		counts[what]++
		if what == service.ApplyCreated || what == service.ApplyReplaced {
			_ = rec.Record(ctx, audit.Entry{Actor: "jobs-file", ActorKind: audit.ActorJobsFile, Action: audit.JobsFileApply,
				Detail: fmt.Sprintf("workflow %s %s from %s", e.Workflow.Name, what, e.Pos)})
		}
		log.Info("jobs file: workflow "+what, "workflow", e.Workflow.Name)
	}
	if len(entries) > 0 {
		log.Info("jobs file: workflows applied", "workflows", len(entries), "created", counts[service.ApplyCreated],
			"replaced", counts[service.ApplyReplaced], "unchanged", counts[service.ApplyUnchanged], "kept", counts[service.ApplyKept])
	}
	return nil
}

func applyWorkflow(ctx context.Context, wfs Workflows, e workflowEntry) (string, error) {
	cur, err := wfs.Get(ctx, e.Workflow.Name)
	if ejserver.IsNotFound(err) {
		_, err = wfs.Create(ctx, e.Workflow)
		return service.ApplyCreated, err
	}
	if err != nil {
		return "", err
	}
	a, _ := json.Marshal(cur.Workflow)
	b, _ := json.Marshal(e.Workflow)
	switch {
	case bytes.Equal(a, b):
		return service.ApplyUnchanged, nil
	case !e.Overwrite:
		return service.ApplyKept, nil
	}
	_, err = wfs.Replace(ctx, e.Workflow.Name, e.Workflow, cur.Version)
	return service.ApplyReplaced, err
}

// jobsFileWorkflows reads the workflows section of a jobs file for `ejserver workflow apply -f` (false: the
// file is not a jobs file with a workflows section, but a list of workflows). They are checked as serve
// --jobs checks them; the server checks their jobs.
func jobsFileWorkflows(path string) ([]json.RawMessage, []string, bool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, false, err
	}
	var top map[string]any
	if yaml.Unmarshal(b, &top) != nil || top["workflows"] == nil || top["name"] != nil {
		return nil, nil, false, nil
	}
	doc, err := parseJobsDoc(path, b)
	if err != nil {
		return nil, nil, true, err
	}
	bodies := make([]json.RawMessage, len(doc.Workflows))
	names := make([]string, len(doc.Workflows))
	for i, e := range doc.Workflows {
		bodies[i], _ = json.Marshal(e.Workflow)
		names[i] = e.Workflow.Name
	}
	return bodies, names, true, nil
}
