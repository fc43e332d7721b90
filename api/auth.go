package api

import (
	"bufio"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"

	"github.com/labstack/echo/v4"
)

// Role is what a token may do.
type Role string

// The roles: an admin token may do everything, a viewer token only reads (GET and HEAD).
const (
	RoleAdmin  Role = "admin"
	RoleViewer Role = "viewer"
)

// MinTokenLen is the shortest token accepted in clear (EJ_API_TOKEN, or a tokens-file line without sha256:).
const MinTokenLen = 16

// Token is one API bearer token: a name for the audit log, a role, and the SHA-256 of the secret (the
// secret itself is never kept, logged or compared directly).
type Token struct {
	Name string
	Role Role
	hash [sha256.Size]byte
}

// NewToken returns a token for secret.
func NewToken(name string, role Role, secret string) (Token, error) {
	if err := checkNameRole(name, role); err != nil {
		return Token{}, err
	}
	if len(secret) < MinTokenLen {
		return Token{}, fmt.Errorf("token %q is shorter than %d characters", name, MinTokenLen)
	}
	return Token{Name: name, Role: role, hash: sha256.Sum256([]byte(secret))}, nil
}

// HashToken returns how a tokens file can hold secret without holding it: "sha256:" and the hex digest.
func HashToken(secret string) string {
	h := sha256.Sum256([]byte(secret))
	return "sha256:" + hex.EncodeToString(h[:])
}

var tokenNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}$`)

func checkNameRole(name string, role Role) error {
	if !tokenNameRE.MatchString(name) {
		return fmt.Errorf("token name %q: 1-64 letters, digits, '_', '.', '@', '-'", name)
	}
	if role != RoleAdmin && role != RoleViewer {
		return fmt.Errorf("token %q: role %q is not admin or viewer", name, role)
	}
	return nil
}

// ParseTokens reads a tokens file: one token per line, "ROLE NAME TOKEN", where ROLE is admin or viewer,
// NAME is what the audit log shows, and TOKEN is either "sha256:" and the hex SHA-256 of the token (what
// `ejserver token new` prints; recommended) or the token itself (at least MinTokenLen characters). Blank
// lines and lines starting with # are ignored. Errors name the line, never the token.
func ParseTokens(r io.Reader) ([]Token, error) {
	var out []Token
	names := map[string]bool{}
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 3 {
			return nil, fmt.Errorf("line %d: want \"ROLE NAME TOKEN\" (3 fields), got %d fields", n, len(f))
		}
		role, name, secret := Role(f[0]), f[1], f[2]
		if err := checkNameRole(name, role); err != nil {
			return nil, fmt.Errorf("line %d: %v", n, err)
		}
		if names[name] {
			return nil, fmt.Errorf("line %d: token name %q is used twice", n, name)
		}
		names[name] = true
		t := Token{Name: name, Role: role}
		if hexDigest, ok := strings.CutPrefix(secret, "sha256:"); ok {
			b, err := hex.DecodeString(hexDigest)
			if err != nil || len(b) != sha256.Size {
				return nil, fmt.Errorf("line %d: token %q: sha256: must be followed by 64 hex digits", n, name)
			}
			copy(t.hash[:], b)
		} else {
			if len(secret) < MinTokenLen {
				return nil, fmt.Errorf("line %d: token %q is shorter than %d characters", n, name, MinTokenLen)
			}
			t.hash = sha256.Sum256([]byte(secret))
		}
		out = append(out, t)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// lookup finds the token whose hash matches secret's, comparing every token in constant time so neither
// the match nor its position shows in the timing.
func lookup(tokens []Token, secret string) (Token, bool) {
	h := sha256.Sum256([]byte(secret))
	var found Token
	match := 0
	for _, t := range tokens {
		eq := subtle.ConstantTimeCompare(h[:], t.hash[:])
		if eq == 1 && match == 0 {
			found = t
		}
		match |= eq
	}
	return found, match == 1
}

// userKey is where the middleware leaves the token's name for the request log.
const userKey = "ejserver.user"

// authError is a 401 or 403 with its WWW-Authenticate challenge (RFC 6750).
type authError struct {
	status    int
	detail    string
	challenge string
}

func (e *authError) Error() string { return e.detail }

const realm = `Bearer realm="ejserver"`

// requireToken authenticates "Authorization: Bearer TOKEN" against tokens: no or an unknown token is 401,
// a token whose role rolesFor does not list for the method is 403.
func requireToken(tokens []Token, rolesFor func(method string) []Role) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			h := c.Request().Header.Get(echo.HeaderAuthorization)
			if h == "" {
				return &authError{http.StatusUnauthorized, "this API needs a bearer token: send Authorization: Bearer <token>", realm}
			}
			scheme, secret, _ := strings.Cut(h, " ")
			secret = strings.TrimSpace(secret)
			if !strings.EqualFold(scheme, "Bearer") || secret == "" {
				return &authError{http.StatusUnauthorized, "the Authorization header must be \"Bearer <token>\"", realm + `, error="invalid_request"`}
			}
			t, ok := lookup(tokens, secret)
			if !ok {
				return &authError{http.StatusUnauthorized, "the bearer token is not valid", realm + `, error="invalid_token"`}
			}
			c.Set(userKey, t.Name)
			allowed := rolesFor(c.Request().Method)
			for _, r := range allowed {
				if r == t.Role {
					return next(c)
				}
			}
			return &authError{http.StatusForbidden, fmt.Sprintf("token %q has the %s role, which may only read", t.Name, t.Role),
				realm + `, error="insufficient_scope"`}
		}
	}
}

// apiRoles: reads for both roles, everything else for admins.
func apiRoles(method string) []Role {
	switch method {
	case http.MethodGet, http.MethodHead:
		return []Role{RoleAdmin, RoleViewer}
	}
	return []Role{RoleAdmin}
}

// anyRole: /metrics (when it needs a token) is a read.
func anyRole(string) []Role { return []Role{RoleAdmin, RoleViewer} }
