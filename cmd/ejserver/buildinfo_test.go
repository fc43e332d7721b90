package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

func TestFromBuildSettings(t *testing.T) {
	stamp := []debug.BuildSetting{{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.time", Value: "2026-11-24T10:00:00Z"},
		{Key: "vcs.modified", Value: "true"}}
	tests := []struct {
		name     string
		in       buildInfo
		settings []debug.BuildSetting
		commit   string
		date     string
	}{
		{"ldflags win", buildInfo{Commit: "fff", Date: "2026-01-01T00:00:00Z"}, stamp, "fff", "2026-01-01T00:00:00Z"},
		{"the VCS stamp fills in, dirty marked", buildInfo{}, stamp, "abc123-dirty", "2026-11-24T10:00:00Z"},
		{"clean stamp", buildInfo{}, stamp[:2], "abc123", "2026-11-24T10:00:00Z"},
		{"no stamp", buildInfo{}, nil, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := fromBuildSettings(tt.in, tt.settings)
			if got.Commit != tt.commit || got.Date != tt.date {
				t.Fatalf("got commit %q date %q, want %q %q", got.Commit, got.Date, tt.commit, tt.date)
			}
		})
	}
}

func TestVersionCommand(t *testing.T) {
	old := [3]string{version, commit, date}
	t.Cleanup(func() { version, commit, date = old[0], old[1], old[2] })
	version, commit, date = "v1.2.3", "0123456789abcdef", "2026-11-24T10:00:00Z"
	if code := run([]string{"--version"}); code != 0 {
		t.Fatalf("--version exited %d", code)
	}
	var text, errOut bytes.Buffer
	if code := versionCmd(nil, &text, &errOut); code != 0 {
		t.Fatalf("version exited %d: %s", code, errOut.String())
	}
	for _, want := range []string{"ejserver v1.2.3", "commit:  0123456789abcdef", "built:   2026-11-24T10:00:00Z", runtime.Version()} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("version output lacks %q:\n%s", want, text.String())
		}
	}
	var out bytes.Buffer
	if code := versionCmd([]string{"--json"}, &out, &out); code != 0 {
		t.Fatalf("version --json exited %d", code)
	}
	var b buildInfo
	if err := json.Unmarshal(out.Bytes(), &b); err != nil || b.Version != "v1.2.3" || b.Go != runtime.Version() ||
		b.Platform != runtime.GOOS+"/"+runtime.GOARCH {
		t.Fatalf("version --json: %+v %v", b, err)
	}
	if code := versionCmd([]string{"extra"}, &out, &out); code != 2 {
		t.Fatalf("version extra: exit %d, want 2", code)
	}
}

func TestHealthcheck(t *testing.T) {
	status := http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" && r.URL.Path != "/readyz" {
			http.NotFound(w, r)
			return
		}
		if r.URL.Path == "/readyz" {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(status)
	}))
	defer srv.Close()
	listen := strings.TrimPrefix(srv.URL, "http://")
	port := listen[strings.LastIndexByte(listen, ':')+1:]
	t.Setenv("EJ_LISTEN", "0.0.0.0:"+port) // as the peer reads it: the wildcard is asked on loopback
	tests := []struct {
		name string
		args []string
		want int
	}{
		{"healthy, address from EJ_LISTEN", nil, 0},
		{"--listen wins", []string{"--listen", listen}, 0},
		{"not ready", []string{"--ready"}, 1},
		{"--url", []string{"--url", srv.URL + "/healthz"}, 0},
		{"wrong path", []string{"--url", srv.URL + "/nothing"}, 1},
		{"nothing listening", []string{"--listen", "127.0.0.1:1"}, 1},
		{"bad address", []string{"--listen", "nonsense"}, 2},
		{"unknown flag", []string{"--bogus"}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			if got := healthcheckCmd(tt.args, &out, &errOut); got != tt.want {
				t.Fatalf("exit %d, want %d: %s%s", got, tt.want, out.String(), errOut.String())
			}
		})
	}
	status = http.StatusServiceUnavailable
	var out bytes.Buffer
	if got := healthcheckCmd(nil, &out, &out); got != 1 {
		t.Fatalf("a 503 /healthz: exit %d, want 1", got)
	}
}

func TestLocalURL(t *testing.T) {
	for listen, want := range map[string]string{
		"127.0.0.1:8080": "http://127.0.0.1:8080/healthz",
		"0.0.0.0:8080":   "http://127.0.0.1:8080/healthz",
		":8080":          "http://127.0.0.1:8080/healthz",
		"[::]:8080":      "http://[::1]:8080/healthz",
		"10.1.2.3:9000":  "http://10.1.2.3:9000/healthz",
	} {
		if got, err := localURL(listen, "/healthz", false); err != nil || got != want {
			t.Errorf("localURL(%q) = %q, %v; want %q", listen, got, err, want)
		}
	}
}
