// Package ejserver holds the domain of the ejserver scheduled-job platform: a job's configuration and its
// validation, the execution records a fire produces, and the error type every layer returns.
//
// It depends on nothing outside the standard library but the cron parser and YAML: ZooKeeper lives in
// internal/cluster, SQL in internal/history, HTTP in api/ and internal/webhook. cmd/ejserver wires them.
package ejserver
