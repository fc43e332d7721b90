package integration

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ejserver/ejserver/client"
	"github.com/ejserver/ejserver/integration/harness"
	"github.com/ejserver/ejserver/internal/testutil/testca"
	"github.com/ejserver/ejserver/internal/testutil/zktest"
	"github.com/ejserver/ejserver/receiver"
)

// apiTLS is a test CA, a loopback certificate for the API in files, and a client config that trusts the CA.
type apiTLS struct {
	ca                        *testca.CA
	caFile, certFile, keyFile string
	clientCAFile              string
	clientCA                  *testca.CA
	client                    *tls.Config
}

func newAPITLS(t *testing.T) apiTLS {
	t.Helper()
	dir := t.TempDir()
	a := apiTLS{ca: testca.New(t, "api-ca"), clientCA: testca.New(t, "client-ca")}
	a.caFile = a.ca.WriteFile(t, dir, "ca.pem")
	a.certFile, a.keyFile = a.ca.Loopback(t, "first").WriteFiles(t, dir, "tls")
	a.clientCAFile = a.clientCA.WriteFile(t, dir, "client-ca.pem")
	pool := x509.NewCertPool()
	pool.AddCert(a.ca.Cert)
	a.client = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	return a
}

func (a apiTLS) args() []string {
	return []string{"--tls-cert", a.certFile, "--tls-key", a.keyFile, "--tls-client-ca", a.clientCAFile}
}

func withClientTLS(cfg *tls.Config) clusterOpt {
	return func(c *harness.PeerConfig) { c.ClientTLS = cfg }
}

// The API on TLS: the CLI, the Go client and the healthcheck verify its certificate; a rotated certificate is
// served at the next handshake while an open connection goes on; TLS 1.1 and client certificates of other
// CAs are refused.
func TestAPIServesTLSAndReloadsItsCertificate(t *testing.T) {
	t.Parallel()
	a := newAPITLS(t)
	c := newCluster(t, 1, withArgs(a.args()...), withClientTLS(a.client))
	p := c.peers[0]
	base := "https://" + p.Addr
	mustDo(t, p, "POST", "/api/v1/jobs", job("tlsjob", "", 1, "http://127.0.0.1:9/never"), http.StatusCreated, nil)

	// the CLI verifies the certificate with -ca-file (or EJ_CA_FILE), and refuses it without
	out, errOut, code := cliRun(t, nil, "job", "list", "-server", base, "-ca-file", a.caFile)
	if code != 0 || !strings.Contains(out, "tlsjob") {
		t.Fatalf("CLI with -ca-file: exit %d\n%s%s", code, out, errOut)
	}
	if out, errOut, code = cliRun(t, []string{"EJ_CA_FILE=" + a.caFile}, "job", "list", "-server", base); code != 0 {
		t.Fatalf("CLI with EJ_CA_FILE: exit %d\n%s%s", code, out, errOut)
	}
	_, errOut, code = cliRun(t, nil, "job", "list", "-server", base)
	if code == 0 || !strings.Contains(errOut, "certificate") {
		t.Fatalf("CLI without the CA: exit %d, want a certificate error:\n%s", code, errOut)
	}
	other := testca.New(t, "other").WriteFile(t, t.TempDir(), "other.pem")
	if _, errOut, code = cliRun(t, nil, "job", "list", "-server", base, "-ca-file", other); code == 0 || !strings.Contains(errOut, "unknown authority") {
		t.Fatalf("CLI with another CA: exit %d:\n%s", code, errOut)
	}
	if _, errOut, code = cliRun(t, nil, "job", "list", "-server", base, "-ca-file", filepath.Join(t.TempDir(), "none")); code == 0 || !strings.Contains(errOut, "-ca-file") {
		t.Fatalf("CLI with a missing CA file: exit %d, want an error naming -ca-file:\n%s", code, errOut)
	}

	// the Go client
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tc, err := client.TLSConfig(client.TLSFiles{CAFile: a.caFile})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.New(base, client.WithTLSConfig(tc)).GetJob(ctx, "tlsjob"); err != nil {
		t.Fatalf("Go client with the CA: %v", err)
	}
	if _, err := client.New(base).GetJob(ctx, "tlsjob"); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("Go client without the CA: %v, want a certificate error", err)
	}

	// the healthcheck finds the TLS listener through the peer's own variables
	if out, errOut, code = cliRun(t, []string{"EJ_LISTEN=" + p.Addr, "EJ_TLS_CERT=" + a.certFile}, "healthcheck"); code != 0 {
		t.Fatalf("healthcheck against TLS: exit %d\n%s%s", code, out, errOut)
	}
	if _, _, code = cliRun(t, []string{"EJ_LISTEN=" + p.Addr, "EJ_TLS_CERT="}, "healthcheck"); code != 1 {
		t.Fatalf("plain healthcheck against TLS: exit %d, want 1", code)
	}

	// a connection kept open across the rotation goes on; the next handshake gets the new certificate
	keep := &http.Client{Transport: &http.Transport{TLSClientConfig: a.client.Clone(), MaxIdleConnsPerHost: 1}}
	defer keep.CloseIdleConnections()
	leafOf := func(hc *http.Client) (cn string, reused bool) {
		t.Helper()
		req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
			GotConn: func(ci httptrace.GotConnInfo) { reused = ci.Reused },
		}), "GET", base+"/healthz", nil)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("GET /healthz: %v", err)
		}
		_, _ = io.Copy(io.Discard, resp.Body) // read to the end, so the connection is kept
		resp.Body.Close()
		return resp.TLS.PeerCertificates[0].Subject.CommonName, reused
	}
	if cn, _ := leafOf(keep); cn != "first" {
		t.Fatalf("served %q", cn)
	}
	second := a.ca.Loopback(t, "second")
	dir := filepath.Dir(a.certFile)
	for _, f := range []struct {
		tmp, dst string
		b        []byte
	}{
		{filepath.Join(dir, "c.tmp"), a.certFile, second.CertPEM}, {filepath.Join(dir, "k.tmp"), a.keyFile, second.KeyPEM},
	} {
		if err := os.WriteFile(f.tmp, f.b, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(f.tmp, f.dst); err != nil {
			t.Fatal(err)
		}
	}
	if cn, reused := leafOf(keep); !reused || cn != "first" {
		t.Fatalf("the open connection: reused %v, certificate %q; want it kept, with the certificate it was made with", reused, cn)
	}
	fresh := &http.Client{Transport: &http.Transport{TLSClientConfig: a.client.Clone()}}
	defer fresh.CloseIdleConnections()
	if cn, _ := leafOf(fresh); cn != "second" {
		t.Fatalf("after the rotation a new connection got %q, want the rotated certificate", cn)
	}
	if !strings.Contains(p.Log(), "TLS certificate reloaded") {
		t.Error("the reload was not logged")
	}

	// TLS 1.1 is refused
	old := a.client.Clone()
	old.MinVersion, old.MaxVersion = tls.VersionTLS10, tls.VersionTLS11
	if conn, err := tls.Dial("tcp", p.Addr, old); err == nil {
		conn.Close()
		t.Fatal("a TLS 1.1 handshake succeeded")
	}

	// a client certificate of the client CA is accepted; one of another CA is refused at the handshake
	good := a.clientCA.Client(t, "deployer")
	gc, gk := good.WriteFiles(t, t.TempDir(), "good")
	if out, errOut, code = cliRun(t, nil, "job", "list", "-server", base, "-ca-file", a.caFile, "-client-cert", gc, "-client-key", gk); code != 0 {
		t.Fatalf("CLI with a client certificate: exit %d\n%s%s", code, out, errOut)
	}
	// a certificate of another CA, forced on the server (Go's client would not offer it to a server that asks
	// for other CAs): the handshake is refused
	bad := testca.New(t, "rogue").Client(t, "deployer")
	badPair, err := tls.X509KeyPair(bad.CertPEM, bad.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	forced := a.client.Clone()
	forced.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &badPair, nil }
	conn, err := tls.Dial("tcp", p.Addr, forced)
	if err == nil {
		_, _ = conn.Write([]byte("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"))
		_, err = conn.Read(make([]byte, 64)) // TLS 1.3: the server's verdict on the certificate arrives here
		conn.Close()
	}
	if err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("a rogue client certificate: %v, want the handshake refused", err)
	}
}

// Three peers on a ZooKeeper whose plaintext port is closed, with the digest ACL too: they register, share a
// job's items, fire it, and fail a killed peer's items over. A wrong CA stops a peer at start, naming the flag.
func TestPeersOnATLSOnlyZooKeeper(t *testing.T) {
	t.Parallel()
	const sessionTimeout = 2 * time.Second
	f := zktest.StartTLSFixture(t)
	zs, caFile, certFile, keyFile := f.Server, f.CAFile, f.CertFile, f.KeyFile
	recv := newReceiver(t)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	recv.Respond(func(d harness.Delivery) (int, string, time.Duration) {
		if d.Payload.Source != "FAILOVER" {
			<-release // in flight until the test ends
		}
		return 200, `{}`, 0
	})
	zkArgs := []string{"--zk-tls-ca", caFile, "--zk-tls-cert", certFile, "--zk-tls-key", keyFile, "--zk-digest", "ej:tls-and-digest"}
	c := newCluster(t, 3, withZK(zs.Addr), withArgs(zkArgs...), withSessionTimeout(sessionTimeout))
	var inst struct {
		Items []struct {
			InstanceID string `json:"instanceId"`
		} `json:"items"`
	}
	if !eventually(20*time.Second, func() bool {
		mustDo(t, c.peers[0], "GET", "/api/v1/instances", nil, http.StatusOK, &inst)
		return len(inst.Items) == 3
	}) {
		t.Fatalf("instances registered: %+v", inst.Items)
	}

	spec := job("tlsfo", "0/2 * * * * ?", 3, recv.URL)
	spec["failover"] = true
	spec["retry"] = map[string]any{"maxAttempts": 1}
	mustDo(t, c.peers[0], "POST", "/api/v1/jobs", spec, http.StatusCreated, nil)
	ds, ok := recv.WaitFor(30*time.Second, func(ds []harness.Delivery) bool { return len(ds) >= 3 })
	if !ok {
		t.Fatalf("only %d items fired", len(ds))
	}
	owner := map[int]string{}
	peersUsed := map[string]bool{}
	for _, d := range ds[:3] {
		owner[d.Payload.ShardingItem] = d.Payload.InstanceID
		peersUsed[d.Payload.InstanceID] = true
	}
	if len(owner) != 3 || len(peersUsed) != 3 {
		t.Fatalf("the first fire: items %v over peers %v, want one item on each of 3 peers", owner, peersUsed)
	}
	victim := c.peers[1]
	var victimItem = -1
	for item, id := range owner {
		if id == victim.InstanceID() {
			victimItem = item
		}
	}
	victim.Kill()
	fo, ok := recv.WaitFor(sessionTimeout+15*time.Second, func(ds []harness.Delivery) bool {
		for _, d := range ds {
			if d.Payload.Source == "FAILOVER" {
				return true
			}
		}
		return false
	})
	if !ok {
		t.Fatalf("item %d of the killed peer was not failed over", victimItem)
	}
	for _, d := range fo {
		if d.Payload.Source == "FAILOVER" && (d.Payload.ShardingItem != victimItem || d.Payload.InstanceID == victim.InstanceID()) {
			t.Fatalf("failed over item %d by %s; want item %d by a survivor", d.Payload.ShardingItem, d.Payload.InstanceID, victimItem)
		}
	}

	// a CA that did not sign ZooKeeper's certificate: the start fails at once, naming the flag
	wrongCA := testca.New(t, "wrong").WriteFile(t, t.TempDir(), "wrong.pem")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	port, err := harness.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	cmd := serveCmd(t, &testCluster{zk: zs.Addr, ns: c.ns}, ctx, fmt.Sprintf("127.0.0.1:%d", port),
		"--zk-tls-ca", wrongCA, "--zk-tls-cert", certFile, "--zk-tls-key", keyFile)
	out, err := cmd.CombinedOutput()
	if code := exitCode(err); code != 1 || !strings.Contains(string(out), "--zk-tls-ca") || !strings.Contains(string(out), "unknown authority") {
		t.Fatalf("a wrong ZooKeeper CA: exit %d, want 1 with an error naming --zk-tls-ca:\n%s", code, out)
	}
	// without a client certificate the server (ssl.clientAuth=need) refuses the handshake: named too
	out, err = serveCmd(t, &testCluster{zk: zs.Addr, ns: c.ns}, ctx, fmt.Sprintf("127.0.0.1:%d", port), "--zk-tls-ca", caFile).CombinedOutput()
	if code := exitCode(err); code != 1 || !strings.Contains(string(out), "--zk-tls-cert") {
		t.Fatalf("no ZooKeeper client certificate: exit %d, want 1 with an error naming --zk-tls-cert:\n%s", code, out)
	}
}

// A receiver that demands client certificates gets signed webhooks from a job whose webhook.tls holds one;
// with the wrong client certificate the failure is recorded with its cause. The key never leaves: not in the
// job's JSON, the registry dump, nor the peers' logs.
func TestWebhookMutualTLS(t *testing.T) {
	t.Parallel()
	serverCA, clientCA := testca.New(t, "receiver-ca"), testca.New(t, "client-ca")
	srv := serverCA.Issue(t, testca.Names{CommonName: "receiver", DNS: []string{"receiver.internal"}})
	srvPair, err := tls.X509KeyPair(srv.CertPEM, srv.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(clientCA.Cert)
	recv, err := harness.NewReceiverTLS(&tls.Config{Certificates: []tls.Certificate{srvPair}, ClientCAs: pool,
		ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12}, "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(recv.Close)
	good, rogue := clientCA.Client(t, "ejserver"), testca.New(t, "rogue").Client(t, "ejserver")

	c := newCluster(t, 1)
	p := c.peers[0]
	spec := job("mtls", "", 1, recv.URL)
	spec["retry"] = map[string]any{"maxAttempts": 1}
	spec["webhook"].(map[string]any)["generateSecret"] = true
	spec["webhook"].(map[string]any)["tls"] = map[string]any{"caPem": string(serverCA.CertPEM), "serverName": "receiver.internal",
		"clientCertPem": string(good.CertPEM), "clientKeyPem": string(good.KeyPEM)}
	var created struct {
		GeneratedSecret string `json:"generatedSecret"`
	}
	raw := mustDo(t, p, "POST", "/api/v1/jobs", spec, http.StatusCreated, &created)
	keyLine := strings.Split(strings.TrimSpace(string(good.KeyPEM)), "\n")[1]
	if strings.Contains(string(raw), "PRIVATE KEY") || !strings.Contains(string(raw), `"hasClientKey":true`) {
		t.Fatalf("the create answer: %s", raw)
	}

	mustDo(t, p, "POST", "/api/v1/jobs/mtls/trigger", map[string]any{}, http.StatusAccepted, nil)
	ds, ok := recv.WaitFor(20*time.Second, func(ds []harness.Delivery) bool { return len(ds) >= 1 })
	if !ok {
		t.Fatalf("no webhook reached the mTLS receiver:\n%s", p.Log())
	}
	if err := receiver.Verify(created.GeneratedSecret, ds[0].Header, ds[0].Body); err != nil {
		t.Fatalf("the webhook is not signed: %v", err)
	}

	// the GET body PUT back keeps the key; then the wrong client certificate
	var got map[string]any
	mustDo(t, p, "GET", "/api/v1/jobs/mtls", nil, http.StatusOK, &got)
	wh := got["webhook"].(map[string]any)
	if tlsv := wh["tls"].(map[string]any); tlsv["hasClientKey"] != true || tlsv["clientKeyPem"] != nil {
		t.Fatalf("GET shows webhook.tls as %v", tlsv)
	}
	wh["tls"].(map[string]any)["clientCertPem"] = string(rogue.CertPEM)
	wh["tls"].(map[string]any)["clientKeyPem"] = string(rogue.KeyPEM)
	put := map[string]any{"jobName": "mtls", "shardingTotalCount": 1, "webhook": wh, "retry": map[string]any{"maxAttempts": 1}}
	mustDo(t, p, "PUT", "/api/v1/jobs/mtls", put, http.StatusOK, nil)
	mustDo(t, p, "POST", "/api/v1/jobs/mtls/trigger", map[string]any{}, http.StatusAccepted, nil)
	var failed struct {
		Items []struct {
			Success      bool   `json:"success"`
			FailureCause string `json:"failureCause"`
		} `json:"items"`
	}
	if !eventually(20*time.Second, func() bool {
		mustDo(t, p, "GET", "/api/v1/jobs/mtls/executions", nil, http.StatusOK, &failed)
		for _, e := range failed.Items {
			if !e.Success && e.FailureCause != "" {
				return true
			}
		}
		return false
	}) {
		t.Fatalf("no failed execution recorded: %+v", failed.Items)
	}
	for _, e := range failed.Items {
		if !e.Success && !strings.Contains(e.FailureCause, "certificate") {
			t.Fatalf("the failure cause %q does not say the certificate was refused", e.FailureCause)
		} else if !e.Success {
			t.Logf("recorded failure cause: %s", e.FailureCause)
		}
	}
	if n := len(recv.Deliveries(nil)); n != 1 {
		t.Fatalf("the receiver's handler got %d requests; the rogue certificate's should not have reached it", n)
	}

	// a key that does not match the certificate is a field error
	wh["tls"].(map[string]any)["clientKeyPem"] = string(good.KeyPEM)
	body := mustDo(t, p, "PUT", "/api/v1/jobs/mtls", put, http.StatusBadRequest, nil)
	if !strings.Contains(string(body), "webhook.tls.clientKeyPem") {
		t.Fatalf("a mismatched key: %s", body)
	}

	dump := mustDo(t, p, "GET", "/api/v1/jobs/mtls/dump", nil, http.StatusOK, nil)
	for what, s := range map[string]string{"dump": string(dump), "log": p.Log()} {
		if strings.Contains(s, keyLine) || strings.Contains(s, "PRIVATE KEY") {
			t.Fatalf("the %s holds the client key", what)
		}
	}
	if !strings.Contains(string(dump), "ejserver.webhook.tls.clientKeyPem: '******'") {
		t.Fatalf("the dump does not show the key as hidden:\n%s", dump)
	}
}

// Client certificates stand for tokens-file lines by their name: one mapped to a viewer line reads but cannot
// write, one mapped to an admin line writes, an unknown name is 401, and a bearer token wins over a certificate.
func TestClientCertificateMappedToViewerCannotWrite(t *testing.T) {
	t.Parallel()
	a := newAPITLS(t)
	dir := t.TempDir()
	const adminToken = "admin-token-0123456789abcdef"
	tokens := filepath.Join(dir, "tokens")
	lines := "admin ops " + adminToken + "\nviewer dashboards.example -\nadmin release-bot -\n"
	if err := os.WriteFile(tokens, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	c := newCluster(t, 1, withArgs(append(a.args(), "--api-tokens", tokens)...), withClientTLS(a.client))
	p := c.peers[0]
	base := "https://" + p.Addr

	certClient := func(names testca.Names) *client.Client {
		t.Helper()
		names.Client = true
		cf, kf := a.clientCA.Issue(t, names).WriteFiles(t, t.TempDir(), "client")
		tc, err := client.TLSConfig(client.TLSFiles{CAFile: a.caFile, CertFile: cf, KeyFile: kf})
		if err != nil {
			t.Fatal(err)
		}
		return client.New(base, client.WithTLSConfig(tc))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	spec := client.JobSpec{JobName: "certjob", ShardingTotalCount: 1, Webhook: client.WebhookSpec{URL: "http://127.0.0.1:9/never"}}

	// a viewer by its DNS SAN (the name wins over the CN)
	viewer := certClient(testca.Names{CommonName: "ignored", DNS: []string{"dashboards.example"}})
	who, err := viewer.WhoAmI(ctx)
	if err != nil || who.Name != "dashboards.example" || who.Role != "viewer" {
		t.Fatalf("whoami of the viewer certificate: %+v, %v", who, err)
	}
	if _, err := viewer.ListJobs(ctx, client.ListJobsOptions{}); err != nil {
		t.Fatalf("the viewer certificate cannot read: %v", err)
	}
	if _, err := viewer.CreateJob(ctx, spec); client.StatusOf(err) != http.StatusForbidden {
		t.Fatalf("the viewer certificate's create: %v, want 403", err)
	}

	// an admin by its CN
	admin := certClient(testca.Names{CommonName: "release-bot"})
	if _, err := admin.CreateJob(ctx, spec); err != nil {
		t.Fatalf("the admin certificate's create: %v", err)
	}
	if _, err := viewer.TriggerJob(ctx, "certjob", client.TriggerRequest{}); client.StatusOf(err) != http.StatusForbidden {
		t.Fatalf("the viewer certificate's trigger: %v, want 403", err)
	}

	// a certificate of the right CA whose name is on no line
	stranger := certClient(testca.Names{CommonName: "stranger"})
	if _, err := stranger.ListJobs(ctx, client.ListJobsOptions{}); client.StatusOf(err) != http.StatusUnauthorized {
		t.Fatalf("an unknown certificate name: %v, want 401", err)
	}

	// a bearer token wins over the certificate: the viewer certificate with the admin token writes as ops
	cf, kf := a.clientCA.Issue(t, testca.Names{DNS: []string{"dashboards.example"}, Client: true}).WriteFiles(t, t.TempDir(), "both")
	out, errOut, code := cliRun(t, []string{"EJ_TOKEN=" + adminToken}, "job", "disable", "certjob", "-server", base,
		"-ca-file", a.caFile, "-client-cert", cf, "-client-key", kf)
	if code != 0 {
		t.Fatalf("the CLI with the viewer certificate and the admin token: exit %d\n%s%s", code, out, errOut)
	}
	if !strings.Contains(p.Log(), `msg="api write" `) || !strings.Contains(p.Log(), "user=ops") {
		t.Error("the write was not logged as the token's")
	}
	_, errOut, code = cliRun(t, nil, "job", "enable", "certjob", "-server", base, "-ca-file", a.caFile, "-client-cert", cf, "-client-key", kf)
	if code == 0 || !strings.Contains(errOut, "403") {
		t.Fatalf("the CLI with the viewer certificate alone: exit %d, want a 403:\n%s", code, errOut)
	}
}
