package access

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Role is what a token may do, wherever its scope lets it.
type Role string

// The roles, from the most to the least powerful.
const (
	// Admin may do everything: create, replace and delete jobs, and (unscoped) cluster-wide changes.
	Admin Role = "admin"
	// Operator runs jobs: trigger, enable and disable jobs, items and a job's servers; no create, replace or
	// delete.
	Operator Role = "operator"
	// Viewer only reads.
	Viewer Role = "viewer"
)

// Roles lists the roles, admin first.
var Roles = []Role{Admin, Operator, Viewer}

// ParseRole checks a role's name.
func ParseRole(s string) (Role, error) {
	r := Role(s)
	if !slices.Contains(Roles, r) {
		return "", fmt.Errorf("role %q is not admin, operator or viewer", s)
	}
	return r, nil
}

// Action is what a route does, as far as roles are concerned.
type Action int

const (
	// Read answers without changing anything: every role.
	Read Action = iota + 1
	// Operate runs or pauses an existing job (trigger, enable, disable a job, an item or a job's server):
	// admins and operators.
	Operate
	// Manage creates, replaces or deletes a job: admins.
	Manage
	// Administer changes what reaches every job (a server or instance for all jobs, cluster-wide settings
	// and objects): unscoped admins.
	Administer
)

func (a Action) String() string {
	switch a {
	case Read:
		return "read"
	case Operate:
		return "operate"
	case Manage:
		return "manage"
	case Administer:
		return "administer"
	}
	return fmt.Sprintf("Action(%d)", int(a))
}

// Reach is what a route's answer is about, as far as scopes are concerned.
type Reach int

const (
	// Public routes need no token (health, the spec, the docs, the console's files).
	Public Reach = iota + 1
	// CallbackToken routes are authorised by an execution's own callback token, never by an API token.
	CallbackToken
	// Nothing routes show no job data (a cron preview, whoami): every token, scoped or not.
	Nothing
	// OneJob routes are about the job their path names: a scoped token gets 404 outside its scope.
	OneJob
	// JobRows routes list or fetch rows that belong to jobs (the jobs list, executions, notification
	// history): a scoped token gets only its jobs' rows, and 404 for one row of another job.
	JobRows
	// Cluster routes are about the whole cluster (servers, instances, alert channels, default alert rules,
	// Prometheus metrics): scoped tokens get 404, as if they did not exist.
	Cluster
)

func (r Reach) String() string {
	switch r {
	case Public:
		return "public"
	case CallbackToken:
		return "callback-token"
	case Nothing:
		return "nothing"
	case OneJob:
		return "one-job"
	case JobRows:
		return "job-rows"
	case Cluster:
		return "cluster"
	}
	return fmt.Sprintf("Reach(%d)", int(r))
}

// Rule is a route's access decision: what it does and what it is about.
type Rule struct {
	Action Action
	Reach  Reach
}

// Grant is what one token holds: a role within a scope.
type Grant struct {
	Role  Role
	Scope Scope
}

// Decision is the outcome of a check.
type Decision int

const (
	// Allow: go on. For OneJob and JobRows routes of a scoped token, the handler still keeps to the scope
	// (InScope for the one job, the scope's filter for rows).
	Allow Decision = iota + 1
	// Forbid: 403, the role may not do this (whatever the object).
	Forbid
	// Hide: 404, the object is outside the token's scope.
	Hide
	// NotAPI: the route takes no API token (Public, CallbackToken): the API token check does not apply.
	NotAPI
)

func (d Decision) String() string {
	switch d {
	case Allow:
		return "allow"
	case Forbid:
		return "forbid"
	case Hide:
		return "hide"
	case NotAPI:
		return "not-api"
	}
	return fmt.Sprintf("Decision(%d)", int(d))
}

// May reports whether the role allows the action, scope aside.
func (r Role) May(a Action) bool {
	switch a {
	case Read:
		return r == Admin || r == Operator || r == Viewer
	case Operate:
		return r == Admin || r == Operator
	case Manage, Administer:
		return r == Admin
	}
	return false
}

// Decide checks a grant against a route's rule: the role first, then the scope. An unknown action or
// reach is refused (fail closed).
func Decide(g Grant, r Rule) Decision {
	switch r.Reach {
	case Public, CallbackToken:
		return NotAPI
	case Nothing, OneJob, JobRows, Cluster:
	default:
		return Forbid
	}
	if !g.Role.May(r.Action) {
		return Forbid
	}
	if r.Reach == Cluster && !g.Scope.Unscoped() {
		return Hide
	}
	if r.Action == Administer && !g.Scope.Unscoped() {
		return Hide // what reaches every job is not a scoped token's
	}
	return Allow
}

// Scope is the jobs a token sees: those whose name starts with one of Prefixes or whose label is one of
// Labels. The zero Scope is unscoped: every job.
type Scope struct {
	Prefixes []string
	Labels   []string
}

// Unscoped reports whether the scope is every job.
func (s Scope) Unscoped() bool { return len(s.Prefixes) == 0 && len(s.Labels) == 0 }

// InScope reports whether a job (its name and label) is in the scope.
func (s Scope) InScope(name, label string) bool {
	if s.Unscoped() {
		return true
	}
	for _, p := range s.Prefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return label != "" && slices.Contains(s.Labels, label)
}

// ByNameOnly reports whether the scope decides by name alone (no label part): then a job's name says
// whether it is in scope without reading its config.
func (s Scope) ByNameOnly() bool { return len(s.Labels) == 0 }

// String is the scope as a tokens file writes it ("prefix:team-a-|label:payments"), "" when unscoped.
func (s Scope) String() string {
	parts := make([]string, 0, len(s.Prefixes)+len(s.Labels))
	for _, p := range s.Prefixes {
		parts = append(parts, "prefix:"+p)
	}
	for _, l := range s.Labels {
		parts = append(parts, "label:"+l)
	}
	return strings.Join(parts, "|")
}

// MaxScopeParts bounds the alternatives of one scope.
const MaxScopeParts = 32

// maxPartLen is a job name's and a label's longest (ejserver.MaxJobNameLen).
const maxPartLen = 128

// A prefix is the start of a job name: the job names' characters, starting with a letter or digit.
var prefixRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

// ParseScope reads "prefix:P|label:L|...": a job is in scope if it matches any alternative. A prefix has
// job names' characters (letters, digits, '_', '.', '-', starting with a letter or digit); a label is any
// text without spaces or '|' (a job's label is matched exactly, case included). The empty string is an
// error: an unscoped token has no scope= at all.
func ParseScope(s string) (Scope, error) {
	if s == "" {
		return Scope{}, fmt.Errorf("scope is empty: leave scope= out for a token that sees every job")
	}
	var out Scope
	parts := strings.Split(s, "|")
	if len(parts) > MaxScopeParts {
		return Scope{}, fmt.Errorf("scope has %d alternatives; the limit is %d", len(parts), MaxScopeParts)
	}
	for i, part := range parts {
		kind, value, ok := strings.Cut(part, ":")
		if !ok || (kind != "prefix" && kind != "label") {
			return Scope{}, fmt.Errorf("scope alternative %d %q: want prefix:NAME-START or label:LABEL", i+1, clip(part))
		}
		switch {
		case value == "":
			return Scope{}, fmt.Errorf("scope alternative %d: %s: is empty", i+1, kind)
		case len(value) > maxPartLen:
			return Scope{}, fmt.Errorf("scope alternative %d: %s: is %d characters long; the limit is %d", i+1, kind, len(value), maxPartLen)
		case kind == "prefix" && !prefixRE.MatchString(value):
			return Scope{}, fmt.Errorf("scope alternative %d: prefix %q may only hold letters, digits, '_', '.' and '-', and must start with a letter or digit", i+1, value)
		case kind == "label" && strings.ContainsFunc(value, isSpaceOrControl):
			return Scope{}, fmt.Errorf("scope alternative %d: label %q holds a space or a control character", i+1, clip(value))
		}
		list := &out.Prefixes
		if kind == "label" {
			list = &out.Labels
		}
		if slices.Contains(*list, value) {
			return Scope{}, fmt.Errorf("scope alternative %d: %s:%s is given twice", i+1, kind, value)
		}
		*list = append(*list, value)
	}
	return out, nil
}

func isSpaceOrControl(r rune) bool {
	return r <= ' ' || r == 0x7f || r == 0x85 || r == 0xa0 || r == 0x2028 || r == 0x2029
}

// clip keeps an error message short whatever the input.
func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// Can reports whether the grant allows the action on some job (the console shows a button only then).
func (g Grant) Can(a Action) bool {
	return g.Role.May(a) && (a != Administer || g.Scope.Unscoped())
}
