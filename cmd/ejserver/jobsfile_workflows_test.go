package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseJobsFileWithWorkflows(t *testing.T) {
	good := `
workflows:            # before the jobs it references: the order does not matter
  - name: nightly
    cron: "0 0 2 * * ?"
    excludeCalendars: [cn-holidays]
    overwrite: true
    alerts:
      rules: [{on: [WORKFLOW_FAILED], channels: [ops]}]
    nodes:
      - {name: settle, job: settle}
      - {name: report, job: report, after: [{node: settle}]}
jobs:
  - jobName: settle
    shardingTotalCount: 2
    webhook: {url: http://127.0.0.1:9090/hook}
`
	doc, err := parseJobsDoc("jobs.yaml", []byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if len(doc.Jobs) != 1 || len(doc.Workflows) != 1 {
		t.Fatalf("doc %+v", doc)
	}
	w := doc.Workflows[0]
	if w.Pos != "jobs.yaml:3 (workflow 1, nightly)" || !w.Overwrite || w.Workflow.Overlap != "skip" ||
		w.Workflow.Nodes[1].After[0].On != "success" || w.Workflow.ExcludeCalendars[0] != "cn-holidays" || len(w.Workflow.Alerts.Rules) != 1 {
		t.Fatalf("workflow %+v", w)
	}
	// the job list of such a file is what `job apply -f` reads
	if jobs, err := parseJobsFile("jobs.yaml", []byte(good)); err != nil || len(jobs) != 1 {
		t.Fatalf("jobs %v %v", jobs, err)
	}
	// report is neither in the file nor in the cluster: refused before anything is stored, naming the node
	err = checkWorkflowJobs(doc, func(job string) bool { return false })
	if err == nil || !strings.Contains(err.Error(), `jobs.yaml:3 (workflow 1, nightly): nodes[1].job: node "report": job "report" not found`) {
		t.Fatalf("missing job: %v", err)
	}
	if err := checkWorkflowJobs(doc, func(job string) bool { return job == "report" }); err != nil {
		t.Fatalf("jobs in the file and in the cluster: %v", err)
	}

	const job = "jobs:\n  - {jobName: a, shardingTotalCount: 1, webhook: {url: 'http://h/x'}}\n"
	bad := []struct{ name, file, want string }{
		{"unknown section", "jobz: []\n", `jobs.yaml:1: want a list of jobs, or a mapping with the sections jobs and workflows ("jobz" is neither)`},
		{"workflows not a list", job + "workflows: {name: x}\n", "jobs.yaml:3: workflows: want a list of workflows"},
		{"cycle", job + "workflows:\n  - name: w\n    nodes: [{name: x, job: a, after: [{node: y}]}, {name: y, job: a, after: [{node: x}]}]\n",
			"jobs.yaml:4 (workflow 1, w): nodes[0].after: node \"x\" is on a cycle"},
		{"unknown parent", job + "workflows:\n  - name: w\n    nodes: [{name: x, job: a, after: [{node: nope}]}]\n",
			`jobs.yaml:4 (workflow 1, w): nodes[0].after[0].node: node "x" waits for node "nope"`},
		{"unknown field", job + "workflows:\n  - name: w\n    crons: x\n    nodes: [{name: x, job: a}]\n", "jobs.yaml:4 (workflow 1, w): crons: unknown field"},
		{"bad alert", job + "workflows:\n  - name: w\n    alerts: {rules: [{on: [FIRE_FAILED], channels: [ops]}]}\n    nodes: [{name: x, job: a}]\n",
			"jobs.yaml:4 (workflow 1, w): alerts.rules[0].on[0]: \"FIRE_FAILED\" is not an event"},
		{"bad overwrite", job + "workflows:\n  - name: w\n    overwrite: sure\n    nodes: [{name: x, job: a}]\n", "jobs.yaml:4 (workflow 1, w): overwrite: must be true or false"},
		{"twice", job + "workflows:\n  - {name: w, nodes: [{name: x, job: a}]}\n  - {name: w, nodes: [{name: x, job: a}]}\n",
			`jobs.yaml:5 (workflow 2, w): name: "w" is also at jobs.yaml:4 (workflow 1, w)`},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseJobsDoc("jobs.yaml", []byte(tt.file))
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Fatalf("error %v, want prefix %q", err, tt.want)
			}
		})
	}
}

// `ejserver workflow apply -f` takes a jobs file's workflows section, or a plain list of workflows.
func TestJobsFileWorkflowsForTheCLI(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "jobs.yaml")
	doc := "jobs: []\nworkflows:\n  - {name: w, overwrite: true, nodes: [{name: x, job: a}]}\n"
	if err := os.WriteFile(file, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	bodies, names, ok, err := jobsFileWorkflows(file)
	if err != nil || !ok || len(names) != 1 || names[0] != "w" || strings.Contains(string(bodies[0]), "overwrite") ||
		!strings.Contains(string(bodies[0]), `"overlap":"skip"`) {
		t.Fatalf("%v %q %s %v", ok, names, bodies, err)
	}
	list := filepath.Join(dir, "wfs.yaml")
	if err := os.WriteFile(list, []byte("- {name: w, nodes: [{name: x, job: a}]}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, ok, err := jobsFileWorkflows(list); ok || err != nil {
		t.Fatalf("a list of workflows taken for a jobs file: %v %v", ok, err)
	}
}
