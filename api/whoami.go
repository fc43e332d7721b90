package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/ejserver/ejserver/internal/access"
)

// Caller is who the API takes the caller for: the web console asks it to show only the actions the
// caller's token may take.
type Caller struct {
	// Authenticated is false when the API runs without tokens: then anyone who reaches it is an admin.
	Authenticated bool `json:"authenticated"`
	// Name is the token's name (the audit log's user); absent without tokens.
	Name string `json:"name,omitempty" example:"ops"`
	// Role is admin (may do everything), operator (reads, triggers, enables and disables) or viewer (reads).
	Role Role `json:"role" example:"admin" enums:"admin,operator,viewer"`
	// Scope is the jobs the token sees, as its tokens-file line writes it; absent for every job.
	Scope string `json:"scope,omitempty" example:"prefix:team-a-|label:payments"`
	// CanWrite says whether the caller may use some of the API's writes (an admin or an operator token).
	CanWrite bool `json:"canWrite"`
	// Can says which kinds of action the caller may take on the jobs it sees.
	Can Abilities `json:"can"`
}

// Abilities are what a caller may do, by kind of action.
type Abilities struct {
	// Operate: trigger, enable and disable jobs, items and a job's servers.
	Operate bool `json:"operate"`
	// Manage: create, replace and delete jobs (within the scope).
	Manage bool `json:"manage"`
	// Cluster: see the servers and instances pages (unscoped tokens).
	Cluster bool `json:"cluster"`
	// Administer: disable or enable a server for every job, and other cluster-wide changes (unscoped admins).
	Administer bool `json:"administer"`
}

// whoami godoc
//
//	@Summary		Who am I
//	@Description	The caller's token name, role and scope, and what it may do, so a client (the web console) shows only the actions it may take. Without tokens configured the API is open and every caller is an admin (authenticated false).
//	@Tags			auth
//	@Produce		json,application/problem+json
//	@Success		200	{object}	Caller
//	@Failure		401	{object}	Problem	"no or unknown token"
//	@Security		BearerAuth
//	@Router			/api/v1/auth/whoami [get]
func whoami(c echo.Context) error {
	t, authenticated := callerOf(c)
	g := t.grant()
	return c.JSON(http.StatusOK, Caller{Authenticated: authenticated, Name: t.Name, Role: t.Role, Scope: g.Scope.String(),
		CanWrite: g.Can(access.Operate),
		Can: Abilities{Operate: g.Can(access.Operate), Manage: g.Can(access.Manage), Cluster: g.Scope.Unscoped(),
			Administer: g.Can(access.Administer)}})
}
