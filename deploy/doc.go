// Package deploy holds no code: its tests check the deployment files beside them (Kubernetes manifests,
// the Compose file, the systemd unit, the Prometheus rules) against the real types, tools and binary. It
// is a module of its own so that k8s.io/api and compose-go stay out of the server's go.mod; `make
// test-deploy` runs it.
package deploy
