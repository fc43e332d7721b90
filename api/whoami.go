package api

import (
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
)

// Caller is who the API takes the caller for: the web console asks it to show only the actions the
// caller's token may take.
type Caller struct {
	// Authenticated is false when the API runs without tokens: then anyone who reaches it is an admin.
	Authenticated bool `json:"authenticated"`
	// Name is the token's name (the audit log's user); absent without tokens.
	Name string `json:"name,omitempty" example:"ops"`
	// Role is admin (may do everything) or viewer (may only read).
	Role Role `json:"role" example:"admin"`
	// CanWrite says whether the caller may use the API's writes (create, trigger, disable, delete...).
	CanWrite bool `json:"canWrite"`
}

// whoami godoc
//
//	@Summary		Who am I
//	@Description	The caller's token name and role, so a client (the web console) shows only the actions it may take. Without tokens configured the API is open and every caller is an admin (authenticated false).
//	@Tags			auth
//	@Produce		json,application/problem+json
//	@Success		200	{object}	Caller
//	@Failure		401	{object}	Problem	"no or unknown token"
//	@Security		BearerAuth
//	@Router			/api/v1/auth/whoami [get]
func whoami(tokens []Token) echo.HandlerFunc {
	return func(c echo.Context) error {
		if len(tokens) == 0 {
			return c.JSON(http.StatusOK, Caller{Role: RoleAdmin, CanWrite: true})
		}
		// requireToken has let only a known token through: find it again for its role.
		_, secret, _ := strings.Cut(c.Request().Header.Get(echo.HeaderAuthorization), " ")
		t, ok := lookup(tokens, strings.TrimSpace(secret))
		if !ok {
			return &authError{http.StatusUnauthorized, "the bearer token is not valid", realm + `, error="invalid_token"`}
		}
		return c.JSON(http.StatusOK, Caller{Authenticated: true, Name: t.Name, Role: t.Role, CanWrite: t.Role == RoleAdmin})
	}
}
