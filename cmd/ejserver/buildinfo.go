package main

import (
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// Set at build time with -ldflags "-X main.version=... -X main.commit=... -X main.date=..." (make build,
// make release). date is the commit's time, not the build's, so that building one commit twice gives the
// same bytes. A plain `go build` in a git checkout leaves them empty and Go's own VCS stamp fills commit
// and date in.
var (
	version = "dev"
	commit  = ""
	date    = ""
)

// buildInfo is what `ejserver version` prints.
type buildInfo struct {
	Version  string `json:"version"`
	Commit   string `json:"commit"`
	Date     string `json:"date"`
	Go       string `json:"go"`
	Platform string `json:"platform"`
}

// currentBuild returns this binary's build facts: the -X values, else Go's VCS stamp, else "unknown".
func currentBuild() buildInfo {
	b := buildInfo{Version: version, Commit: commit, Date: date, Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi, ok := debug.ReadBuildInfo(); ok {
		b = fromBuildSettings(b, bi.Settings)
	}
	if b.Commit == "" {
		b.Commit = "unknown"
	}
	if b.Date == "" {
		b.Date = "unknown"
	}
	return b
}

// fromBuildSettings fills what -ldflags left empty from Go's VCS stamp (vcs.revision, vcs.time,
// vcs.modified).
func fromBuildSettings(b buildInfo, settings []debug.BuildSetting) buildInfo {
	fromStamp, dirty := b.Commit == "", false
	for _, s := range settings {
		switch s.Key {
		case "vcs.revision":
			if fromStamp {
				b.Commit = s.Value
			}
		case "vcs.time":
			if b.Date == "" {
				b.Date = s.Value
			}
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if fromStamp && dirty && b.Commit != "" {
		b.Commit += "-dirty"
	}
	return b
}

// versionCmd is `ejserver version [--json]` and `ejserver --version`.
func versionCmd(args []string, stdout, stderr io.Writer) int {
	b := currentBuild()
	switch {
	case len(args) == 0:
		fmt.Fprintf(stdout, "ejserver %s\n  commit:  %s\n  built:   %s (the commit's time)\n  go:      %s %s\n",
			b.Version, b.Commit, b.Date, b.Go, b.Platform)
		return 0
	case len(args) == 1 && (args[0] == "--json" || args[0] == "-json"):
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(b)
		return 0
	}
	fmt.Fprintln(stderr, "usage: ejserver version [--json]")
	return 2
}
