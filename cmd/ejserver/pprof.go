package main

import (
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"time"
)

// pprofFlag adds --pprof [EJ_PPROF]: an address on loopback where the Go profiler (net/http/pprof) is served,
// for finding where a peer spends its time under load (the benchmark harness uses it). It is opt-in, loopback
// only (profiles show internals), and served on its own listener and mux, never on the API's. The listener
// opens as the flag is parsed, so a busy or refused address is a flag error and start-up is profiled too.
func pprofFlag(f *envFlags) {
	f.envs["pprof"] = envName("pprof")
	f.fs.Func("pprof", "serve the Go profiler (net/http/pprof) on this loopback address, e.g. 127.0.0.1:6060 (default: off)", startPprof)
}

func startPprof(addr string) error {
	if addr == "" {
		return nil
	}
	if !isLoopback(addr) {
		return fmt.Errorf("%q: the profiler listens on loopback only (127.0.0.1:port, [::1]:port or localhost:port)", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }() // lives as long as the process
	return nil
}
