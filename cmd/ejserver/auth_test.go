package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/ejserver/ejserver/api"
)

// `token new` and `token hash` print lines the tokens-file parser reads back with the role and scope asked for.
func TestTokenCmdLines(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := tokenCmd([]string{"new", "--role", "operator", "--name", "team-a-ops", "--scope", "prefix:team-a-|label:payments"},
		nil, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	var secret, line string
	for _, l := range strings.Split(out.String(), "\n") {
		if s, ok := strings.CutPrefix(l, "token: "); ok {
			secret = s
		}
		if s, ok := strings.CutPrefix(l, "tokens-file line (holds only the hash): "); ok {
			line = s
		}
	}
	if secret == "" || strings.Contains(line, secret) {
		t.Fatalf("output:\n%s", out.String())
	}
	toks, err := api.ParseTokens(strings.NewReader(line))
	if err != nil || len(toks) != 1 || toks[0].Role != api.RoleOperator || toks[0].Scope.String() != "prefix:team-a-|label:payments" {
		t.Fatalf("line %q parses to %+v, %v", line, toks, err)
	}

	out.Reset()
	if code := tokenCmd([]string{"hash", "--role", "viewer", "--name", "v"}, strings.NewReader(secret+"\n"), &out, &errOut); code != 0 ||
		strings.TrimSpace(out.String()) != "viewer v "+api.HashToken(secret) {
		t.Fatalf("hash: exit %d, %q", code, out.String())
	}

	bad := []struct{ args []string }{
		{[]string{"new", "--scope", "prefix:a/b"}},
		{[]string{"new", "--role", "root"}},
	}
	for _, tt := range bad {
		errOut.Reset()
		if code := tokenCmd(tt.args, nil, &out, &errOut); code != 2 || errOut.Len() == 0 {
			t.Fatalf("%v: exit %d, stderr %q", tt.args, code, errOut.String())
		}
	}
}
