// Package access decides what an API token may do: its role (admin, operator, viewer), its scope (the jobs
// it sees, by name prefix or label) and, for each kind of route, whether a request is allowed, refused
// (403: the role may not do this anywhere) or hidden (404: the object is outside the token's scope, so its
// existence does not leak). It is a pure core: values in, decisions out; api/ maps routes to Rules and
// decisions to HTTP.
//
// The order of the checks is fixed: the role first (it depends only on the route and the token, never on
// the object, so a 403 tells nothing about which jobs exist), then the scope.
package access
