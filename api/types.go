package api

import (
	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/service"
)

// Job is a job as the API returns it: its config, with the webhook as WebhookView (never a secret), and its
// state. It is service.JobView with the webhook field replaced, so the documented schema is the one sent.
type Job struct {
	service.JobView
	// Webhook shadows JobView's ejserver.Webhook (encoding/json and swag both take the shallower field).
	Webhook WebhookView `json:"webhook"`
}

// WebhookView is a job's webhook as the API returns it: secrets are write-only, so only whether one is set
// (hasSecret) and whether a previous one still signs during a rotation (secretRotating) are shown.
type WebhookView struct {
	URL                      string            `json:"url" example:"https://receiver.example.com/webhook"`
	Method                   string            `json:"method" example:"POST"`
	Headers                  map[string]string `json:"headers,omitempty"`
	TimeoutMs                int               `json:"timeoutMs" example:"5000"`
	ConnectTimeoutMs         int               `json:"connectTimeoutMs" example:"3000"`
	SecretGracePeriodSeconds int               `json:"secretGracePeriodSeconds" example:"86400"`
	HasSecret                bool              `json:"hasSecret"`
	SecretRotating           bool              `json:"secretRotating,omitempty"`
	// TLS is the webhook's TLS settings, its client key write-only (hasClientKey).
	TLS *WebhookTLSView `json:"tls,omitempty"`
}

// WebhookTLSView is webhook.tls as the API returns it: the client key is write-only, like the secret.
type WebhookTLSView struct {
	// CAPem is the PEM CA bundle that verifies the receiver (absent: the system's roots).
	CAPem string `json:"caPem,omitempty"`
	// ClientCertPem is the PEM client certificate presented to a receiver that asks for one.
	ClientCertPem string `json:"clientCertPem,omitempty"`
	// ServerName is the name the receiver's certificate must hold (absent: the URL's host).
	ServerName   string `json:"serverName,omitempty" example:"receiver.internal"`
	HasClientKey bool   `json:"hasClientKey"`
}

func webhookView(w ejserver.Webhook) WebhookView {
	var t *WebhookTLSView
	if w.TLS != nil {
		t = &WebhookTLSView{CAPem: w.TLS.CAPem, ClientCertPem: w.TLS.ClientCertPem, ServerName: w.TLS.ServerName,
			HasClientKey: w.TLS.ClientKeyPem != ""}
	}
	return WebhookView{URL: w.URL, Method: w.Method, Headers: w.Headers, TimeoutMs: w.TimeoutMs,
		ConnectTimeoutMs: w.ConnectTimeoutMs, SecretGracePeriodSeconds: w.SecretGracePeriodSeconds,
		HasSecret: w.Secret != "", SecretRotating: w.PreviousSecret != "", TLS: t}
}

func jobOf(v service.JobView) Job { return Job{JobView: v, Webhook: webhookView(v.JobConfig.Webhook)} }

func jobsOf(vs []service.JobView) []Job {
	out := make([]Job, len(vs))
	for i, v := range vs {
		out[i] = jobOf(v)
	}
	return out
}

// JobResponse is a job with, after a create or replace that generated one, its new secret (shown once).
type JobResponse struct {
	Job
	// GeneratedSecret is the webhook secret ejserver generated for this request. It is never shown again.
	GeneratedSecret string `json:"generatedSecret,omitempty" example:"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"`
}

// JobList is a page of jobs, by name.
type JobList struct {
	Items []Job `json:"items"`
	// NextCursor fetches the next page (pass it as cursor); absent on the last page.
	NextCursor string `json:"nextCursor,omitempty"`
	// Total counts the jobs matching the filter on every page.
	Total int `json:"total"`
}

// ItemList is a job's sharding view.
type ItemList struct {
	JobName string             `json:"jobName"`
	Items   []service.ItemView `json:"items"`
}
