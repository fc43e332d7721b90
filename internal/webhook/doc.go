// Package webhook delivers one item of one fire to its job's webhook: it builds the request of the webhook
// contract (DESIGN.md), signs it, sends it over a pooled HTTP client with per-attempt timeouts, retries it,
// and for a streaming DATAFLOW job re-POSTs it while the receiver has more. The dispatcher decides what to
// send and records the Result; this package never touches the registry.
//
// # The request
//
// One request per item per fire, method from the job (default POST), Content-Type application/json, body
// Payload. Headers: webhook-id (the executionId: the same for every retry, so receivers dedupe),
// webhook-timestamp (Unix seconds of this attempt), webhook-signature when the job has a secret
// ("v1,<base64 HMAC-SHA256 of {id}.{timestamp}.{body}>"; during a rotation's grace period one signature per
// secret, space-separated, as Standard Webhooks libraries accept), ElasticJob's shardingContext header, the
// job's own headers (never overriding these; see ForbiddenHeader), User-Agent and Accept (application/json
// unless the job sets its own).
//
// What every request to one webhook setting shares (the URL parsed and checked, the secrets decoded, the
// static headers) is made once into a template the Sender keeps (template.go); a request is that template's
// headers plus the item's and the attempt's, sent through the Sender's resty client.
//
// # Outcomes and retries
//
//	2xx                      success
//	3xx                      failure, not retried (redirects are never followed)
//	408, 429, 5xx            retried; on 429/503 Retry-After (seconds or HTTP date) sets the wait, up to MaxBackoffMs
//	410                      permanent failure (Result.Permanent), not retried
//	other 4xx                failure, not retried
//	timeout, connect error   retried
//	refused target, bad secret  permanent failure, nothing sent
//
// Retries wait Backoff (exponential, with decorrelated or full jitter). The caller's deadline (the item's
// next fire) is never overrun: no attempt starts and no back-off sleeps past it. The body's "attempt" counts
// from 1. Each attempt has a connect timeout (DNS, TCP and TLS, until a connection is ready) and then a
// response timeout (until the body is read); the body is read up to Config.MaxResponseBytes and its first
// Config.ExcerptBytes kept, as valid UTF-8, in the Result.
//
// # Streaming DATAFLOW
//
// With Delivery.Streaming the item is re-POSTed while the receiver answers 2xx with a JSON body
// {"hasMore": true}, and stops at any other answer, when ctx is cancelled or at the deadline. Each POST is a
// distinct message with its own retries: iteration n carries "iteration": n in the body and, for n > 1, the
// webhook-id "{executionId}.{n}" (so a receiver that dedupes on webhook-id still gets every batch, and a
// retry of one batch is still recognised).
//
// # Limits and target safety
//
// A peer-wide bound (Config.MaxConcurrent) and an optional per-job bound (Delivery.MaxConcurrentPerJob)
// limit requests in flight; waiting for a slot ends with ctx or the deadline. Targets must be http or https
// and pass the TargetPolicy: the operator's allow-list (ParseAllowList, --webhook-allow) and the refusal of
// link-local and cloud-metadata addresses, checked on the URL and again on every resolved address when
// dialling, so DNS rebinding cannot get around it.
//
// Secrets are never logged and never appear in a Result or an error.
package webhook
