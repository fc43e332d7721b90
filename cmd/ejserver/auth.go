package main

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"

	"github.com/ejserver/ejserver/api"
	"github.com/ejserver/ejserver/internal/access"
)

// loadTokens reads the API tokens: the --api-tokens file, plus EJ_API_TOKEN as one admin token named
// EJ_API_TOKEN. Errors never show a token.
func loadTokens(file string) ([]api.Token, error) {
	var tokens []api.Token
	if file != "" {
		f, err := os.Open(file)
		if err != nil {
			return nil, fmt.Errorf("--api-tokens: %w", err)
		}
		defer f.Close()
		if tokens, err = api.ParseTokens(f); err != nil {
			return nil, fmt.Errorf("--api-tokens %s: %w", file, err)
		}
		if len(tokens) == 0 {
			return nil, fmt.Errorf("--api-tokens %s: the file holds no token", file)
		}
	}
	if secret := os.Getenv("EJ_API_TOKEN"); secret != "" {
		t, err := api.NewToken("EJ_API_TOKEN", api.RoleAdmin, strings.TrimSpace(secret))
		if err != nil {
			return nil, fmt.Errorf("EJ_API_TOKEN: %w", err)
		}
		tokens = append(tokens, t)
	}
	return tokens, nil
}

// isLoopback reports whether a listen address binds to loopback only ("localhost", 127.0.0.0/8, ::1).
func isLoopback(listen string) bool {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// checkExposure refuses an API without tokens on anything but loopback, unless insecure; it says so either way.
func checkExposure(listen string, tokens []api.Token, insecure bool, log *slog.Logger) error {
	if len(tokens) > 0 {
		var admins, viewers, operators, scoped []string
		for _, t := range tokens {
			switch t.Role {
			case api.RoleAdmin:
				admins = append(admins, t.Name)
			case api.RoleOperator:
				operators = append(operators, t.Name)
			default:
				viewers = append(viewers, t.Name)
			}
			if !t.Scope.Unscoped() {
				scoped = append(scoped, t.Name)
			}
		}
		log.Info("API needs a bearer token", "admin_tokens", strings.Join(admins, ","), "viewer_tokens", strings.Join(viewers, ","),
			"operator_tokens", strings.Join(operators, ","), "scoped_tokens", strings.Join(scoped, ","))
		return nil
	}
	switch {
	case isLoopback(listen):
		log.Warn("API has no tokens: anyone on this machine can change jobs; listening on loopback only (set --api-tokens or EJ_API_TOKEN to listen elsewhere)", "listen", listen)
	case insecure:
		log.Warn("API has no tokens and listens beyond loopback (--insecure): anyone who can reach it can change jobs", "listen", listen)
	default:
		return fmt.Errorf("--listen %s: without API tokens (--api-tokens or EJ_API_TOKEN) ejserver listens on loopback only; add tokens, or --insecure to serve an open API", listen)
	}
	return nil
}

// tokenCmd is `ejserver token new|hash`: make tokens and the tokens-file lines holding their hashes.
func tokenCmd(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 || (args[0] != "new" && args[0] != "hash") {
		fmt.Fprint(stderr, `Usage:
  ejserver token new [--role admin|operator|viewer] [--name NAME] [--scope SCOPE]   print a new token and its tokens-file line
  ejserver token hash [--role admin|operator|viewer] [--name NAME] [--scope SCOPE]  read a token on stdin, print its tokens-file line

SCOPE limits the token to some jobs: prefix:NAME-START, label:LABEL, or several joined by '|'.
`)
		return 2
	}
	fs := flag.NewFlagSet("ejserver token "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	role := fs.String("role", "admin", "admin (everything), operator (read, trigger, enable, disable) or viewer (reads only)")
	name := fs.String("name", "", "the token's name in the audit log and a client certificate's name (default: the role)")
	scopeSpec := fs.String("scope", "", "only the jobs named prefix:NAME-START or labelled label:LABEL, several joined by '|' (default: every job)")
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *name == "" {
		*name = *role
	}
	var scope access.Scope
	if *scopeSpec != "" {
		var err error
		if scope, err = access.ParseScope(*scopeSpec); err != nil {
			fmt.Fprintln(stderr, "ejserver token: --scope:", err)
			return 2
		}
	}
	var secret string
	if args[0] == "new" {
		b := make([]byte, 32)
		if _, err := rand.Read(b); err != nil {
			fmt.Fprintln(stderr, "ejserver token:", err)
			return 1
		}
		secret = "ejt_" + base64.RawURLEncoding.EncodeToString(b)
	} else {
		b, err := io.ReadAll(io.LimitReader(stdin, 4096))
		if err != nil {
			fmt.Fprintln(stderr, "ejserver token:", err)
			return 1
		}
		secret = strings.TrimSpace(string(b))
	}
	if _, err := api.NewToken(*name, api.Role(*role), secret); err != nil {
		fmt.Fprintln(stderr, "ejserver token:", err)
		return 2
	}
	line := api.TokenLine(api.Role(*role), *name, api.HashToken(secret), scope)
	if args[0] == "new" {
		fmt.Fprintf(stdout, "token: %s\n", secret)
		fmt.Fprintf(stdout, "tokens-file line (holds only the hash): %s\n", line)
		return 0
	}
	fmt.Fprintln(stdout, line)
	return 0
}
