package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/ejserver/ejserver/internal/certs"
)

// healthcheckCmd is `ejserver healthcheck`: it asks the local peer's /healthz (or /readyz with --ready) and
// exits 0 on 200, 1 otherwise. A FROM-scratch image has no shell or curl, so this is what a container
// runtime's health check runs. The address comes from --url, else from --listen [EJ_LISTEN], the same
// variable the peer reads, with a wildcard host replaced by loopback. When the peer serves TLS (--tls-cert
// [EJ_TLS_CERT], again the peer's own variable) it asks over https and accepts exactly the certificate in that
// file: a loopback address is rarely among a certificate's names, and the file is the peer's own.
func healthcheckCmd(args []string, stdout, stderr io.Writer) int {
	f := newEnvFlags("ejserver healthcheck", "Exit 0 if the local peer's /healthz (or /readyz) answers 200, else 1.")
	f.fs.SetOutput(stderr)
	listen := f.String("listen", "127.0.0.1:8080", "the peer's --listen address (its wildcard host is asked on loopback)")
	rawURL := f.fs.String("url", "", "the URL to ask instead (overrides --listen)")
	ready := f.fs.Bool("ready", false, "ask /readyz (holds a ZooKeeper session) instead of /healthz (the process answers)")
	timeout := f.fs.Duration("timeout", 3*time.Second, "how long to wait for the answer")
	quiet := f.fs.Bool("quiet", false, "print nothing on success")
	tlsCert := f.String("tls-cert", "", "the peer's --tls-cert: ask over https and accept the certificate in this file")
	caFile := f.fs.String("ca-file", "", "PEM CA bundle that verifies an https --url (default: the system's roots)")
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
		if target, err = localURL(*listen, path, *tlsCert != ""); err != nil {
			fmt.Fprintln(stderr, "ejserver healthcheck: --listen:", err)
			return 2
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	hc, err := probeClient(*tlsCert, *caFile)
	if err != nil {
		fmt.Fprintln(stderr, "ejserver healthcheck:", err)
		return 2
	}
	status, err := probe(ctx, hc, target)
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
func localURL(listen, path string, https bool) (string, error) {
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
	scheme := "http://"
	if https {
		scheme = "https://"
	}
	return scheme + net.JoinHostPort(host, port) + path, nil
}

// probeClient is the HTTP client of the probe: pinned to the certificate in certFile when given, else
// verifying with caFile's CAs (or the system's).
func probeClient(certFile, caFile string) (*http.Client, error) {
	cfg := &tls.Config{MinVersion: certs.MinVersion}
	switch {
	case certFile != "":
		pair, err := certs.LoadLeaf(certFile)
		if err != nil {
			return nil, fmt.Errorf("--tls-cert: %w", err)
		}
		cfg.InsecureSkipVerify = true // replaced by the pin below
		cfg.VerifyConnection = func(st tls.ConnectionState) error {
			if len(st.PeerCertificates) == 0 || !bytes.Equal(st.PeerCertificates[0].Raw, pair.Raw) {
				return fmt.Errorf("the peer's certificate is not the one in %s", certFile)
			}
			return nil
		}
	case caFile != "":
		pool, err := certs.LoadPool(caFile)
		if err != nil {
			return nil, fmt.Errorf("--ca-file: %w", err)
		}
		cfg.RootCAs = pool
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.TLSClientConfig = cfg
	return &http.Client{Transport: t}, nil
}

func probe(ctx context.Context, hc *http.Client, target string) (int, error) {
	if !strings.HasPrefix(target, "http://") && !strings.HasPrefix(target, "https://") {
		return 0, fmt.Errorf("not an http(s) URL")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("User-Agent", "ejserver-healthcheck/"+version)
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	return resp.StatusCode, nil
}
