package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
)

// healthcheckCmd is `ejserver healthcheck`: it asks the local peer's /healthz (or /readyz with --ready) and
// exits 0 on 200, 1 otherwise. A FROM-scratch image has no shell or curl, so this is what a container
// runtime's health check runs. The address comes from --url, else from --listen [EJ_LISTEN], the same
// variable the peer reads, with a wildcard host replaced by loopback.
func healthcheckCmd(args []string, stdout, stderr io.Writer) int {
	f := newEnvFlags("ejserver healthcheck", "Exit 0 if the local peer's /healthz (or /readyz) answers 200, else 1.")
	f.fs.SetOutput(stderr)
	listen := f.String("listen", "127.0.0.1:8080", "the peer's --listen address (its wildcard host is asked on loopback)")
	rawURL := f.fs.String("url", "", "the URL to ask instead (overrides --listen)")
	ready := f.fs.Bool("ready", false, "ask /readyz (holds a ZooKeeper session) instead of /healthz (the process answers)")
	timeout := f.fs.Duration("timeout", 3*time.Second, "how long to wait for the answer")
	quiet := f.fs.Bool("quiet", false, "print nothing on success")
	if err := f.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintln(stderr, "ejserver healthcheck:", err)
		return 2
	}
	target := *rawURL
	if target == "" {
		path := "/healthz"
		if *ready {
			path = "/readyz"
		}
		var err error
		if target, err = localURL(*listen, path); err != nil {
			fmt.Fprintln(stderr, "ejserver healthcheck: --listen:", err)
			return 2
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	status, err := probe(ctx, target)
	if err != nil {
		fmt.Fprintf(stderr, "ejserver healthcheck: %s: %v\n", target, err)
		return 1
	}
	if status != http.StatusOK {
		fmt.Fprintf(stderr, "ejserver healthcheck: %s: status %d\n", target, status)
		return 1
	}
	if !*quiet {
		fmt.Fprintf(stdout, "%s: ok\n", target)
	}
	return 0
}

// localURL is the URL of path on the peer listening at listen, asked from the same host.
func localURL(listen, path string) (string, error) {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return "", err
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
		if ip != nil && ip.To4() == nil {
			host = "::1"
		}
	}
	return "http://" + net.JoinHostPort(host, port) + path, nil
}

func probe(ctx context.Context, target string) (int, error) {
	if !strings.HasPrefix(target, "http://") && !strings.HasPrefix(target, "https://") {
		return 0, fmt.Errorf("not an http(s) URL")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("User-Agent", "ejserver-healthcheck/"+version)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	return resp.StatusCode, nil
}
