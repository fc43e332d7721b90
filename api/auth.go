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

	"github.com/ejserver/ejserver/internal/access"
)

// Role is what a token may do (see access.Role).
type Role string

// The roles: an admin token may do everything; an operator token reads and triggers, enables and disables
// jobs, items and a job's servers (no create, replace or delete); a viewer token only reads.
const (
	RoleAdmin    Role = Role(access.Admin)
	RoleOperator Role = Role(access.Operator)
	RoleViewer   Role = Role(access.Viewer)
)

// MinTokenLen is the shortest token accepted in clear (EJ_API_TOKEN, or a tokens-file line without sha256:).
const MinTokenLen = 16

// CertOnly is the TOKEN column of a tokens-file line that only a client certificate can use.
const CertOnly = "-"

// ClientCertNameKey is where the TLS middleware, which runs before the token check, leaves the name of a
// verified client certificate (a string). The tokens-file line with that NAME is the caller's.
const ClientCertNameKey = "ej.clientCertName"

// Token is one API credential: a name for the audit log, a role, a scope, and the SHA-256 of the bearer
// secret (the secret itself is never kept, logged or compared directly). A token read from a tokens file
// also answers for a client certificate of its name; one whose TOKEN column is "-" answers only for that.
type Token struct {
	Name  string
	Role  Role
	Scope access.Scope
	hash  [sha256.Size]byte
	// bearer: a bearer secret can match it (false for certificate-only lines).
	bearer bool
	// cert: a client certificate of its name can use it (lines of a tokens file, not EJ_API_TOKEN).
	cert bool
}

func (t Token) grant() access.Grant { return access.Grant{Role: access.Role(t.Role), Scope: t.Scope} }

// NewToken returns an unscoped token for secret (EJ_API_TOKEN); no client certificate can use it.
func NewToken(name string, role Role, secret string) (Token, error) {
	if err := checkNameRole(name, role); err != nil {
		return Token{}, err
	}
	if len(secret) < MinTokenLen {
		return Token{}, fmt.Errorf("token %q is shorter than %d characters", name, MinTokenLen)
	}
	return Token{Name: name, Role: role, hash: sha256.Sum256([]byte(secret)), bearer: true}, nil
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
	if _, err := access.ParseRole(string(role)); err != nil {
		return fmt.Errorf("token %q: %v", name, err)
	}
	return nil
}

// TokenLine is a tokens-file line for a token: "ROLE NAME TOKEN" and " scope=..." when scoped.
func TokenLine(role Role, name, token string, scope access.Scope) string {
	line := fmt.Sprintf("%s %s %s", role, name, token)
	if !scope.Unscoped() {
		line += " scope=" + scope.String()
	}
	return line
}

// ParseTokens reads a tokens file: one credential per line, "ROLE NAME TOKEN [scope=SCOPE]".
//   - ROLE is admin, operator or viewer.
//   - NAME is what the audit log shows, and the name a client certificate maps to.
//   - TOKEN is "sha256:" and the hex SHA-256 of the token (what `ejserver token new` prints; recommended),
//     the token itself (at least MinTokenLen characters), or "-" for a line only a client certificate of
//     that NAME can use.
//   - SCOPE limits the token to some jobs: "prefix:team-a-" (names starting so), "label:payments" (jobs
//     whose label is exactly that), or several joined by '|' (a job in any of them). One scope= per line.
//
// Blank lines and lines starting with # are ignored. Errors name the line, never the token.
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
		if len(f) < 3 || len(f) > 4 {
			return nil, fmt.Errorf("line %d: want \"ROLE NAME TOKEN [scope=SCOPE]\" (3 or 4 fields), got %d fields", n, len(f))
		}
		role, name, secret := Role(f[0]), f[1], f[2]
		if err := checkNameRole(name, role); err != nil {
			return nil, fmt.Errorf("line %d: %v", n, err)
		}
		if names[name] {
			return nil, fmt.Errorf("line %d: token name %q is used twice", n, name)
		}
		names[name] = true
		t := Token{Name: name, Role: role, cert: true, bearer: true}
		if len(f) == 4 {
			spec, ok := strings.CutPrefix(f[3], "scope=")
			if !ok {
				return nil, fmt.Errorf("line %d: token %q: the 4th field must be scope=SCOPE (give one scope=, with alternatives joined by '|')", n, name)
			}
			sc, err := access.ParseScope(spec)
			if err != nil {
				return nil, fmt.Errorf("line %d: token %q: %v", n, name, err)
			}
			t.Scope = sc
		}
		switch hexDigest, hashed := strings.CutPrefix(secret, "sha256:"); {
		case secret == CertOnly:
			t.bearer = false
		case hashed:
			b, err := hex.DecodeString(hexDigest)
			if err != nil || len(b) != sha256.Size {
				return nil, fmt.Errorf("line %d: token %q: sha256: must be followed by 64 hex digits", n, name)
			}
			copy(t.hash[:], b)
		default:
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
// the match nor its position shows in the timing. Certificate-only lines never match.
func lookup(tokens []Token, secret string) (Token, bool) {
	h := sha256.Sum256([]byte(secret))
	var found Token
	match := 0
	for _, t := range tokens {
		eq := subtle.ConstantTimeCompare(h[:], t.hash[:])
		if !t.bearer {
			eq = 0
		}
		if eq == 1 && match == 0 {
			found = t
		}
		match |= eq
	}
	return found, match == 1
}

// byCertName finds the tokens-file line a client certificate's name maps to.
func byCertName(tokens []Token, name string) (Token, bool) {
	for _, t := range tokens {
		if t.cert && t.Name == name {
			return t, true
		}
	}
	return Token{}, false
}

// userKey is where the middleware leaves the token's name for the request log; callerKey the Token.
const (
	userKey   = "ejserver.user"
	callerKey = "ejserver.caller"
)

// callerOf returns the token the request came with; without tokens configured the API is open and the
// caller an unscoped admin (ok false).
func callerOf(c echo.Context) (Token, bool) {
	t, ok := c.Get(callerKey).(Token)
	if !ok {
		return Token{Role: RoleAdmin}, false
	}
	return t, true
}

// grantOf is the caller's role and scope.
func grantOf(c echo.Context) access.Grant {
	t, _ := callerOf(c)
	return t.grant()
}

// authError is a 401 or 403 with its WWW-Authenticate challenge (RFC 6750).
type authError struct {
	status    int
	detail    string
	challenge string
}

func (e *authError) Error() string { return e.detail }

const realm = `Bearer realm="ejserver"`

// authenticate finds the caller's token: "Authorization: Bearer TOKEN" if the request has the header, else
// the tokens-file line named by a verified client certificate (ClientCertNameKey). A bearer token wins
// over a certificate: a client that sends both acts as the token. No credential, or an unknown one, is 401.
func authenticate(tokens []Token) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			t, err := identify(c, tokens)
			if err != nil {
				return err
			}
			c.Set(userKey, t.Name)
			c.Set(callerKey, t)
			return next(c)
		}
	}
}

func identify(c echo.Context, tokens []Token) (Token, error) {
	h := c.Request().Header.Get(echo.HeaderAuthorization)
	if h == "" {
		if name, _ := c.Get(ClientCertNameKey).(string); name != "" {
			if t, ok := byCertName(tokens, name); ok {
				return t, nil
			}
			return Token{}, &authError{http.StatusUnauthorized, fmt.Sprintf("the client certificate's name %q is on no line of the tokens file", name),
				realm + `, error="invalid_token"`}
		}
		return Token{}, &authError{http.StatusUnauthorized, "this API needs a bearer token: send Authorization: Bearer <token>", realm}
	}
	scheme, secret, _ := strings.Cut(h, " ")
	secret = strings.TrimSpace(secret)
	if !strings.EqualFold(scheme, "Bearer") || secret == "" {
		return Token{}, &authError{http.StatusUnauthorized, "the Authorization header must be \"Bearer <token>\"", realm + `, error="invalid_request"`}
	}
	t, ok := lookup(tokens, secret)
	if !ok {
		return Token{}, &authError{http.StatusUnauthorized, "the bearer token is not valid", realm + `, error="invalid_token"`}
	}
	return t, nil
}

// forbidden is the 403 of a role that may not take an action, wherever the job.
func forbidden(t Token, a access.Action) error {
	var may string
	switch t.Role {
	case RoleViewer:
		may = "which may only read"
	case RoleOperator:
		may = "which may read, trigger, enable and disable, but not create, replace or delete"
	default:
		may = "which may not " + a.String()
	}
	return &authError{http.StatusForbidden, fmt.Sprintf("token %q has the %s role, %s", t.Name, t.Role, may), realm + `, error="insufficient_scope"`}
}

// outOfScope is the 403 of a scoped token that would create a job outside its scope or move one out of it
// (the caller named the job, so saying so leaks nothing).
func outOfScope(t Token, name, label string) error {
	return &authError{http.StatusForbidden,
		fmt.Sprintf("token %q may only create or change jobs in its scope %s: jobName %q with label %q is outside it", t.Name, t.Scope, name, label),
		realm + `, error="insufficient_scope"`}
}
