package deploy

import (
	"context"
	"errors"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/compose-spec/compose-go/v2/loader"
	"github.com/compose-spec/compose-go/v2/types"
)

// loadCompose loads compose.yaml as Docker Compose does: the Compose specification's schema validation,
// interpolation with the defaults the file gives, anchors and merges resolved.
func loadCompose(t *testing.T) *types.Project {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	p, err := loader.LoadWithContext(ctx, types.ConfigDetails{
		WorkingDir:  wd,
		ConfigFiles: []types.ConfigFile{{Filename: "compose.yaml"}},
		Environment: types.Mapping{}, // the file's own defaults, not this machine's environment
	}, func(o *loader.Options) {
		o.SetProjectName("ejserver", true)
		o.ResolvePaths = true
	})
	if err != nil {
		t.Fatalf("compose.yaml: %v", err)
	}
	return p
}

func TestComposeFile(t *testing.T) {
	p := loadCompose(t)
	var peers, zks []types.ServiceConfig
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for n := range p.Services {
			if !yield(n) {
				return
			}
		}
	}) {
		s := p.Services[name]
		switch {
		case strings.HasPrefix(name, "ejserver-"):
			peers = append(peers, s)
		case strings.HasPrefix(name, "zk"):
			zks = append(zks, s)
		}
	}
	if len(peers) != 3 || len(zks) != 3 || p.Services["postgres"].Name == "" {
		t.Fatalf("want 3 ejserver peers, a ZooKeeper ensemble of 3 and postgres; got services %v", slices.Collect(func(yield func(string) bool) {
			for n := range p.Services {
				if !yield(n) {
					return
				}
			}
		}))
	}

	t.Run("a ZooKeeper ensemble of three", func(t *testing.T) {
		ids := map[string]bool{}
		for _, z := range zks {
			ids[deref(z.Environment["ZOO_MY_ID"])] = true
			servers := deref(z.Environment["ZOO_SERVERS"])
			for _, other := range zks {
				if !strings.Contains(servers, "="+other.Name+":2888:3888") {
					t.Errorf("%s's ZOO_SERVERS %q leaves out %s", z.Name, servers, other.Name)
				}
			}
		}
		if len(ids) != 3 {
			t.Errorf("ZOO_MY_ID values %v are not three distinct ids", ids)
		}
	})

	advertised := map[string]bool{}
	for _, s := range peers {
		t.Run(s.Name, func(t *testing.T) {
			env := map[string]string{}
			for k, v := range s.Environment {
				env[k] = deref(v)
			}
			checkEnvNames(t, s.Name, slices.Collect(func(yield func(string) bool) {
				for k := range env {
					if !yield(k) {
						return
					}
				}
			}))
			for _, hp := range strings.Split(env["EJ_ZK"], ",") {
				host, _, _ := strings.Cut(hp, ":")
				if _, ok := p.Services[host]; !ok {
					t.Errorf("EJ_ZK names %s, no service of the file", host)
				}
				if _, ok := s.DependsOn[host]; !ok {
					t.Errorf("%s does not depend on %s", s.Name, host)
				}
			}
			if len(strings.Split(env["EJ_ZK"], ",")) != len(zks) {
				t.Errorf("EJ_ZK %q does not list the whole ensemble", env["EJ_ZK"])
			}
			dsn, err := url.Parse(env["EJ_HISTORY_DSN"])
			if err != nil || dsn.Scheme != "postgres" || dsn.Hostname() != "postgres" {
				t.Errorf("EJ_HISTORY_DSN %q is not the postgres service: %v", env["EJ_HISTORY_DSN"], err)
			}
			if d := s.DependsOn["postgres"]; d.Condition != types.ServiceConditionHealthy {
				t.Errorf("%s starts before PostgreSQL is healthy", s.Name)
			}
			targets := map[string]bool{}
			for _, sec := range s.Secrets {
				targets[sec.Target] = true
				if _, ok := p.Secrets[sec.Source]; !ok {
					t.Errorf("secret %s is not defined", sec.Source)
				}
			}
			for _, name := range []string{"EJ_API_TOKENS", "EJ_CALLBACK_SECRET_FILE"} {
				if !targets[env[name]] {
					t.Errorf("%s=%q is no secret mounted in %s (%v)", name, env[name], s.Name, targets)
				}
			}
			if u := env["EJ_ADVERTISE_URL"]; u != "http://"+s.Hostname+":8080" || advertised[u] {
				t.Errorf("EJ_ADVERTISE_URL %q is not this peer's own address", u)
			}
			advertised[env["EJ_ADVERTISE_URL"]] = true

			// the health check is ejserver's own, with flags it takes
			hc := s.HealthCheck
			if hc == nil || len(hc.Test) < 3 || hc.Test[0] != "CMD" || hc.Test[1] != "/usr/local/bin/ejserver" || hc.Test[2] != "healthcheck" {
				t.Fatalf("health check %+v is not `ejserver healthcheck`", hc)
			}
			args := append(slices.Clone(hc.Test[3:]), "--url", "http://127.0.0.1:1/readyz")
			err = exec.Command(binary, append([]string{"healthcheck"}, args...)...).Run()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 1 {
				t.Errorf("ejserver healthcheck %v with nothing listening: %v, want exit status 1 (2 is a usage error)", args, err)
			}

			drain := shutdownTimeout(t, env["EJ_SHUTDOWN_TIMEOUT"])
			if s.StopGracePeriod == nil || time.Duration(*s.StopGracePeriod) <= drain+drainMargin {
				t.Errorf("stop_grace_period %v: the peer is killed before --shutdown-timeout %s + %s", s.StopGracePeriod, drain, drainMargin)
			}
			if s.StopSignal != "" && s.StopSignal != "SIGTERM" {
				t.Errorf("stop_signal %s: ejserver drains on SIGTERM", s.StopSignal)
			}
			if len(s.Command) != 1 || s.Command[0] != "serve" {
				t.Errorf("command %v, want serve", s.Command)
			}
		})
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
