package deploy

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"
)

// kustomization is the part of kustomize's Kustomization the manifests use; unknown fields are rejected.
type kustomization struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Labels     []struct {
		Pairs            map[string]string `json:"pairs"`
		IncludeSelectors bool              `json:"includeSelectors"`
	} `json:"labels"`
	Resources []string `json:"resources"`
	Images    []struct {
		Name    string `json:"name"`
		NewName string `json:"newName"`
		NewTag  string `json:"newTag"`
	} `json:"images"`
}

// manifests holds every object of deploy/kubernetes, decoded strictly into the Kubernetes API's types.
type manifests struct {
	deployment    *appsv1.Deployment
	service       *corev1.Service
	configMap     *corev1.ConfigMap
	secret        *corev1.Secret
	account       *corev1.ServiceAccount
	pdb           *policyv1.PodDisruptionBudget
	kustomization *kustomization
	files         map[string]bool // files holding objects the kustomization applies
}

func loadManifests(t *testing.T) manifests {
	t.Helper()
	files, err := filepath.Glob("kubernetes/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests in deploy/kubernetes: %v", err)
	}
	m := manifests{files: map[string]bool{}}
	for _, file := range files {
		raw, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for i, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(raw), -1) {
			if strings.TrimSpace(stripComments(doc)) == "" {
				continue
			}
			var tm metav1.TypeMeta
			if err := yaml.Unmarshal([]byte(doc), &tm); err != nil {
				t.Fatalf("%s #%d: %v", file, i, err)
			}
			var obj any
			switch tm.APIVersion + " " + tm.Kind {
			case "apps/v1 Deployment":
				m.deployment = &appsv1.Deployment{}
				obj = m.deployment
			case "v1 Service":
				m.service = &corev1.Service{}
				obj = m.service
			case "v1 ConfigMap":
				m.configMap = &corev1.ConfigMap{}
				obj = m.configMap
			case "v1 Secret":
				m.secret = &corev1.Secret{}
				obj = m.secret
			case "v1 ServiceAccount":
				m.account = &corev1.ServiceAccount{}
				obj = m.account
			case "policy/v1 PodDisruptionBudget":
				m.pdb = &policyv1.PodDisruptionBudget{}
				obj = m.pdb
			case "kustomize.config.k8s.io/v1beta1 Kustomization":
				m.kustomization = &kustomization{}
				obj = m.kustomization
			default:
				t.Fatalf("%s #%d: an object of kind %q %q that this test does not know", file, i, tm.APIVersion, tm.Kind)
			}
			// strict: a misspelt or misplaced field is an error, not silently dropped as kubectl would
			if err := yaml.UnmarshalStrict([]byte(doc), obj); err != nil {
				t.Fatalf("%s #%d (%s): %v", file, i, tm.Kind, err)
			}
		}
	}
	for name, ok := range map[string]bool{"Deployment": m.deployment != nil, "Service": m.service != nil,
		"ConfigMap": m.configMap != nil, "Secret": m.secret != nil, "ServiceAccount": m.account != nil,
		"PodDisruptionBudget": m.pdb != nil, "Kustomization": m.kustomization != nil} {
		if !ok {
			t.Fatalf("no %s in deploy/kubernetes", name)
		}
	}
	return m
}

func stripComments(doc string) string {
	var b strings.Builder
	for line := range strings.Lines(doc) {
		if !strings.HasPrefix(strings.TrimSpace(line), "#") {
			b.WriteString(line)
		}
	}
	return b.String()
}

func TestKubernetesManifests(t *testing.T) {
	m := loadManifests(t)
	d := m.deployment
	pod := d.Spec.Template.Spec
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers, want the one peer", len(pod.Containers))
	}
	c := pod.Containers[0]
	env := envOf(t, c, m.configMap)

	t.Run("kustomization applies every manifest but the example Secret", func(t *testing.T) {
		var want []string
		files, _ := filepath.Glob("kubernetes/*.yaml")
		for _, f := range files {
			if b := filepath.Base(f); b != "kustomization.yaml" && b != "secret.example.yaml" {
				want = append(want, b)
			}
		}
		got := slices.Sorted(slices.Values(m.kustomization.Resources))
		if !slices.Equal(got, want) {
			t.Errorf("kustomization resources %v, want %v", got, want)
		}
		if len(m.kustomization.Images) != 1 || m.kustomization.Images[0].Name != strings.Split(c.Image, ":")[0] {
			t.Errorf("kustomization images %+v do not name the container's image %s", m.kustomization.Images, c.Image)
		}
	})

	t.Run("selectors match the pods", func(t *testing.T) {
		podLabels := labels.Set(d.Spec.Template.Labels)
		sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
		if err != nil || !sel.Matches(podLabels) {
			t.Errorf("the Deployment's selector %v does not match its pods %v: %v", d.Spec.Selector, podLabels, err)
		}
		if !labels.SelectorFromSet(m.service.Spec.Selector).Matches(podLabels) {
			t.Errorf("the Service's selector %v does not match the pods %v", m.service.Spec.Selector, podLabels)
		}
		pdbSel, err := metav1.LabelSelectorAsSelector(m.pdb.Spec.Selector)
		if err != nil || !pdbSel.Matches(podLabels) {
			t.Errorf("the PodDisruptionBudget's selector does not match the pods: %v", err)
		}
		for _, p := range m.service.Spec.Ports {
			if port(t, c, p.TargetPort) == 0 {
				t.Errorf("the Service's target port %s is no port of the container", p.TargetPort.String())
			}
		}
	})

	t.Run("probes and scrape annotations point at the API's port", func(t *testing.T) {
		listen := listenPort(t, env["EJ_LISTEN"])
		for name, p := range map[string]*corev1.Probe{"readiness": c.ReadinessProbe, "liveness": c.LivenessProbe, "startup": c.StartupProbe} {
			if p == nil || p.HTTPGet == nil {
				t.Errorf("no HTTP %s probe", name)
				continue
			}
			if got := port(t, c, p.HTTPGet.Port); got != listen {
				t.Errorf("%s probe on port %d, the peer listens on %d", name, got, listen)
			}
		}
		if c.ReadinessProbe != nil && c.ReadinessProbe.HTTPGet.Path != "/readyz" {
			t.Errorf("readiness probe %s, want /readyz (ready while the ZooKeeper session is held)", c.ReadinessProbe.HTTPGet.Path)
		}
		if c.LivenessProbe != nil && c.LivenessProbe.HTTPGet.Path != "/healthz" {
			t.Errorf("liveness probe %s, want /healthz (a peer without ZooKeeper must not be restarted for it)", c.LivenessProbe.HTTPGet.Path)
		}
		a := d.Spec.Template.Annotations
		if a["prometheus.io/scrape"] != "true" || a["prometheus.io/port"] != strconv.Itoa(listen) || a["prometheus.io/path"] != "/metrics" {
			t.Errorf("scrape annotations %v, want port %d and /metrics", a, listen)
		}
	})

	t.Run("termination grace covers the drain", func(t *testing.T) {
		grace := time.Duration(*pod.TerminationGracePeriodSeconds) * time.Second
		preStop := time.Duration(0)
		if c.Lifecycle != nil && c.Lifecycle.PreStop != nil && c.Lifecycle.PreStop.Sleep != nil {
			preStop = time.Duration(c.Lifecycle.PreStop.Sleep.Seconds) * time.Second
		}
		drain := shutdownTimeout(t, env["EJ_SHUTDOWN_TIMEOUT"])
		if need := preStop + drain + drainMargin; grace <= need {
			t.Errorf("terminationGracePeriodSeconds %s: the kubelet kills the peer before preStop %s + --shutdown-timeout %s + %s",
				grace, preStop, drain, drainMargin)
		}
		t.Logf("grace %s > preStop %s + shutdown timeout %s + %s", grace, preStop, drain, drainMargin)
	})

	t.Run("identity from the pod's fields, secrets from the Secret", func(t *testing.T) {
		refs := map[string]corev1.EnvVar{}
		for _, e := range c.Env {
			refs[e.Name] = e
		}
		if v := refs["POD_IP"].ValueFrom; v == nil || v.FieldRef == nil || v.FieldRef.FieldPath != "status.podIP" {
			t.Error("POD_IP is not the pod's status.podIP")
		}
		if env["EJ_SERVER_IP"] != "$(POD_IP)" {
			t.Errorf("EJ_SERVER_IP=%q, want the pod's IP", env["EJ_SERVER_IP"])
		}
		if u := env["EJ_ADVERTISE_URL"]; !strings.HasPrefix(u, "https://") || !strings.Contains(u, "$(POD_") {
			t.Errorf("EJ_ADVERTISE_URL=%q is not built from the pod's fields", u)
		}
		for _, name := range []string{"EJ_ZK_DIGEST", "EJ_HISTORY_DSN"} {
			v := refs[name].ValueFrom
			if v == nil || v.SecretKeyRef == nil || v.SecretKeyRef.Name != m.secret.Name {
				t.Errorf("%s does not come from the Secret %s", name, m.secret.Name)
				continue
			}
			if _, ok := m.secret.StringData[v.SecretKeyRef.Key]; !ok {
				t.Errorf("%s names the key %q, which the Secret does not have", name, v.SecretKeyRef.Key)
			}
		}
		mounted := secretFiles(t, pod, c, m.secret)
		for _, name := range []string{"EJ_API_TOKENS", "EJ_CALLBACK_SECRET_FILE"} {
			if !mounted[env[name]] {
				t.Errorf("%s=%q is no file of the mounted Secret (%v)", name, env[name], mounted)
			}
		}
	})

	t.Run("certificates from Secrets, mounted as directories, HTTPS everywhere", func(t *testing.T) {
		dirs := secretDirs(pod, c)
		tlsVars := []string{"EJ_TLS_CERT", "EJ_TLS_KEY", "EJ_TLS_CLIENT_CA", "EJ_ZK_TLS_CA", "EJ_ZK_TLS_CERT", "EJ_ZK_TLS_KEY"}
		for _, name := range tlsVars {
			path, ok := env[name]
			if !ok {
				continue
			}
			if _, ok := dirs[filepath.Dir(path)]; !ok {
				t.Errorf("%s=%q is in no directory mounted whole from a Secret (%v): a subPath or item mount would not see rotations", name, path, dirs)
			}
		}
		if env["EJ_TLS_CERT"] == "" || env["EJ_TLS_KEY"] == "" {
			t.Fatal("the API does not serve TLS (EJ_TLS_CERT and EJ_TLS_KEY)")
		}
		for name, p := range map[string]*corev1.Probe{"readiness": c.ReadinessProbe, "liveness": c.LivenessProbe, "startup": c.StartupProbe} {
			if p != nil && p.HTTPGet != nil && p.HTTPGet.Scheme != corev1.URISchemeHTTPS {
				t.Errorf("the %s probe asks %q, the API serves HTTPS", name, p.HTTPGet.Scheme)
			}
		}
		if d.Spec.Template.Annotations["prometheus.io/scheme"] != "https" {
			t.Error("the scrape annotations do not say https")
		}
		// the ConfigMap's comments name the optional files: they must be files of the mounts too
		for _, line := range strings.Split(configMapComments(t), "\n") {
			for _, name := range tlsVars {
				if _, v, ok := strings.Cut(line, name+": "); ok {
					if _, ok := dirs[filepath.Dir(strings.TrimSpace(v))]; !ok {
						t.Errorf("configmap.yaml suggests %s=%s, in no mounted Secret directory", name, v)
					}
				}
			}
		}
	})

	t.Run("an unprivileged, read-only peer with resources", func(t *testing.T) {
		sc := pod.SecurityContext
		if sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.RunAsUser == nil || *sc.RunAsUser != 65532 {
			t.Error("the pod does not run as the image's user 65532, non-root")
		}
		csc := c.SecurityContext
		if csc == nil || csc.ReadOnlyRootFilesystem == nil || !*csc.ReadOnlyRootFilesystem ||
			csc.AllowPrivilegeEscalation == nil || *csc.AllowPrivilegeEscalation || csc.Capabilities == nil ||
			!slices.Contains(csc.Capabilities.Drop, "ALL") {
			t.Error("the container is not read-only, without privilege escalation and capabilities")
		}
		if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
			t.Error("no CPU and memory requests, or no memory limit")
		}
		if c.Resources.Limits.Memory().Cmp(*c.Resources.Requests.Memory()) < 0 {
			t.Error("the memory limit is below the request")
		}
		if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
			t.Error("the pod mounts a service account token it does not need")
		}
	})

	t.Run("upgrades and disruptions keep peers up", func(t *testing.T) {
		if *d.Spec.Replicas < 3 {
			t.Errorf("%d replicas: a cluster wants 3 or more", *d.Spec.Replicas)
		}
		ru := d.Spec.Strategy.RollingUpdate
		if d.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType || ru == nil || ru.MaxUnavailable.IntValue() != 0 {
			t.Error("the rolling update may take a peer down before its replacement is ready")
		}
		if m.pdb.Spec.MaxUnavailable == nil || m.pdb.Spec.MaxUnavailable.IntValue() != 1 {
			t.Error("the PodDisruptionBudget does not keep all but one peer")
		}
	})

	t.Run("every EJ_ variable is one ejserver reads", func(t *testing.T) {
		checkEnvNames(t, "deployment/configmap", slices.Collect(func(yield func(string) bool) {
			for k := range env {
				if !yield(k) {
					return
				}
			}
		}))
	})
}

// envOf returns the container's environment as the kubelet builds it: the ConfigMap's keys, then env.
func envOf(t *testing.T, c corev1.Container, cm *corev1.ConfigMap) map[string]string {
	t.Helper()
	env := map[string]string{}
	for _, from := range c.EnvFrom {
		if from.ConfigMapRef == nil || from.ConfigMapRef.Name != cm.Name {
			t.Fatalf("envFrom %+v is not the ConfigMap %s", from, cm.Name)
		}
		for k, v := range cm.Data {
			env[k] = v
		}
	}
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}
	return env
}

// port resolves a probe's or Service's port (a number or a container port's name) to a number, 0 if none.
func port(t *testing.T, c corev1.Container, p intstr.IntOrString) int {
	t.Helper()
	if p.Type == intstr.Int {
		for _, cp := range c.Ports {
			if int(cp.ContainerPort) == p.IntValue() {
				return p.IntValue()
			}
		}
		return 0
	}
	for _, cp := range c.Ports {
		if cp.Name == p.StrVal {
			return int(cp.ContainerPort)
		}
	}
	return 0
}

func listenPort(t *testing.T, listen string) int {
	t.Helper()
	_, p, err := net.SplitHostPort(listen)
	if err != nil {
		t.Fatalf("EJ_LISTEN=%q: %v", listen, err)
	}
	n, _ := strconv.Atoi(p)
	return n
}

// secretDirs maps the directories where a Secret is mounted whole (no items, no subPath) to its name.
func secretDirs(pod corev1.PodSpec, c corev1.Container) map[string]string {
	dirs := map[string]string{}
	for _, v := range pod.Volumes {
		if v.Secret == nil || len(v.Secret.Items) > 0 {
			continue
		}
		for _, vm := range c.VolumeMounts {
			if vm.Name == v.Name && vm.SubPath == "" {
				dirs[vm.MountPath] = v.Secret.SecretName
			}
		}
	}
	return dirs
}

// configMapComments is the commented-out part of configmap.yaml: the optional settings it documents.
func configMapComments(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile("kubernetes/configmap.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for line := range strings.Lines(string(raw)) {
		if t := strings.TrimSpace(line); strings.HasPrefix(t, "#") {
			b.WriteString(strings.TrimSpace(strings.TrimPrefix(t, "#")) + "\n")
		}
	}
	return b.String()
}

// secretFiles returns the paths of the files the Secret's volume puts into the container.
func secretFiles(t *testing.T, pod corev1.PodSpec, c corev1.Container, s *corev1.Secret) map[string]bool {
	t.Helper()
	files := map[string]bool{}
	for _, v := range pod.Volumes {
		if v.Secret == nil || v.Secret.SecretName != s.Name {
			continue
		}
		for _, vm := range c.VolumeMounts {
			if vm.Name != v.Name {
				continue
			}
			for _, it := range v.Secret.Items {
				if _, ok := s.StringData[it.Key]; !ok {
					t.Errorf("the volume %s names the key %q, which the Secret does not have", v.Name, it.Key)
				}
				files[filepath.Join(vm.MountPath, it.Path)] = true
			}
		}
	}
	return files
}

// The probes' and the scrape's paths answer on a real peer started with the manifests' settings (against
// the ZooKeeper that make test-deploy starts: EJ_TEST_ZK).
func TestKubernetesProbesAnswerOnARealPeer(t *testing.T) {
	zk := os.Getenv("EJ_TEST_ZK")
	if zk == "" {
		if os.Getenv("EJ_DEPLOY_TOOLS") == "1" {
			t.Fatal("EJ_TEST_ZK is not set")
		}
		t.Skip("EJ_TEST_ZK is not set (make test-deploy starts a ZooKeeper)")
	}
	m := loadManifests(t)
	c := m.deployment.Spec.Template.Spec.Containers[0]
	env := envOf(t, c, m.configMap)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	dir := t.TempDir()
	secret := filepath.Join(dir, "callback-secret")
	if err := os.WriteFile(secret, []byte(strings.Repeat("s", 48)), 0o600); err != nil {
		t.Fatal(err)
	}
	// the manifests' settings, but loopback, this test's ZooKeeper and files, and no PostgreSQL or digest
	cmd := exec.Command(binary, "serve")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	for k, v := range env {
		switch k {
		case "EJ_ZK_DIGEST", "EJ_HISTORY_DSN", "EJ_API_TOKENS", "EJ_SERVER_IP", "EJ_ADVERTISE_URL", "EJ_DATA_DIR", "EJ_LISTEN", "EJ_ZK", "EJ_NAMESPACE",
			"EJ_TLS_CERT", "EJ_TLS_KEY":
			continue
		}
		if strings.HasPrefix(k, "EJ_") {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
	}
	cmd.Env = append(cmd.Env, "EJ_ZK="+zk, "EJ_NAMESPACE=deploy-probes-"+strconv.Itoa(os.Getpid()), "EJ_LISTEN="+addr,
		"EJ_SERVER_IP=127.0.0.1", "EJ_DATA_DIR="+dir, "EJ_CALLBACK_SECRET_FILE="+secret, "EJ_SESSION_TIMEOUT=4s")
	if env["EJ_TLS_CERT"] != "" {
		certFile, keyFile := selfSigned(t, dir)
		cmd.Env = append(cmd.Env, "EJ_TLS_CERT="+certFile, "EJ_TLS_KEY="+keyFile)
	}
	// the kubelet's probes and the scrape speak the scheme the manifests say, without verifying the
	// certificate (as the kubelet does)
	scheme := strings.ToLower(string(c.ReadinessProbe.HTTPGet.Scheme))
	if scheme == "" {
		scheme = "http"
	}
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	defer hc.CloseIdleConnections()
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("peer log:\n%s", log.String())
		}
	}()
	get := func(path string) (int, string) {
		resp, err := hc.Get(scheme + "://" + addr + path)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return resp.StatusCode, string(b)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		if status, _ := get(c.ReadinessProbe.HTTPGet.Path); status == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the peer did not become ready")
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, p := range []*corev1.Probe{c.StartupProbe, c.LivenessProbe, c.ReadinessProbe} {
		if status, body := get(p.HTTPGet.Path); status != http.StatusOK {
			t.Errorf("probe %s: %d %s", p.HTTPGet.Path, status, body)
		}
	}
	status, body := get(m.deployment.Spec.Template.Annotations["prometheus.io/path"])
	if status != http.StatusOK || !strings.Contains(body, "ejserver_zookeeper_session_up 1") {
		t.Errorf("scrape path: %d %.200s", status, body)
	}
	var ready struct {
		Ready  bool `json:"ready"`
		Checks struct {
			ZooKeeper struct {
				Status string `json:"status"`
			} `json:"zookeeper"`
		} `json:"checks"`
	}
	if _, b := get("/readyz"); json.Unmarshal([]byte(b), &ready) != nil || !ready.Ready || ready.Checks.ZooKeeper.Status != "ok" {
		t.Errorf("/readyz does not report the ZooKeeper session: %s", b)
	}
}

// selfSigned writes a self-signed certificate for 127.0.0.1 and its key into dir.
func selfSigned(t *testing.T, dir string) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ejserver"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}
