package integration

import (
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ejserver/ejserver/integration/harness"
)

// `serve --jobs` with a workflows section: the workflow (listed before the jobs it runs) is created at
// start-up and audited by jobs-file; a file whose workflow names a job neither in the file nor in the
// cluster stops the start, naming the workflow and the node, before anything is stored.
func TestServeAppliesWorkflowsFromTheJobsFile(t *testing.T) {
	t.Parallel()
	recv := newReceiver(t)
	dir := t.TempDir()
	file := writeFile(t, dir, "jobs.yaml", fmt.Sprintf(`
workflows:
  - name: chain
    nodes:
      - {name: first, job: jf-a}
      - {name: second, job: jf-b, after: [{node: first}]}
jobs:
  - {jobName: jf-a, shardingTotalCount: 1, webhook: {url: %[1]q}}
  - {jobName: jf-b, shardingTotalCount: 1, webhook: {url: %[1]q}}
`, recv.URL))
	c := newCluster(t, 1, withArgs("--jobs", file))
	p := c.peers[0]
	var wf struct {
		Name  string `json:"name"`
		Nodes []struct{ Name, Job string }
	}
	mustDo(t, p, "GET", "/api/v1/workflows/chain", nil, http.StatusOK, &wf)
	if len(wf.Nodes) != 2 || wf.Nodes[1].Job != "jf-b" {
		t.Fatalf("workflow from the file: %+v", wf)
	}
	var run wfRun
	mustDo(t, p, "POST", "/api/v1/workflows/chain/runs", nil, http.StatusAccepted, &run)
	if got := waitRun(t, p, "chain", run.ID, 30*time.Second); got.State != "SUCCEEDED" {
		t.Fatalf("run of the file's workflow %s: %+v", got.State, got)
	}
	var trail struct{ Items []auditEntry }
	mustDo(t, p, "GET", "/api/v1/audit?limit=100", nil, http.StatusOK, &trail)
	found := false
	for _, e := range trail.Items {
		found = found || (e.ActorKind == "jobs-file" && e.Action == "jobsfile.apply" &&
			e.Detail == "workflow chain created from "+file+":3 (workflow 1, chain)")
	}
	if !found {
		t.Fatalf("no jobs-file entry for the workflow in %+v", trail.Items)
	}

	bad := writeFile(t, dir, "bad.yaml", fmt.Sprintf(`
jobs:
  - {jobName: early, shardingTotalCount: 1, webhook: {url: %q}}
workflows:
  - name: broken
    nodes: [{name: x, job: early}, {name: y, job: nowhere, after: [{node: x}]}]
`, recv.URL))
	_, err := harness.StartPeer(harness.PeerConfig{Binary: binary, ZK: c.zk, Namespace: c.ns, ServerIP: "127.0.0.8",
		DataDir: filepath.Join(dir, "bad"), ExtraArgs: []string{"--jobs", bad}})
	// the start-up error as the peer logs it (quotes escaped)
	if err == nil || !strings.Contains(err.Error(), `bad.yaml:5 (workflow 1, broken): nodes[1].job: node \"y\": job \"nowhere\" not found`) {
		t.Fatalf("a workflow naming a missing job: %v", err)
	}
	mustDo(t, p, "GET", "/api/v1/jobs/early", nil, http.StatusNotFound, nil)
}
