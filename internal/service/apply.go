package service

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/ejserver/ejserver"
)

// What ApplyJob did with a job.
const (
	ApplyCreated   = "created"
	ApplyReplaced  = "replaced"
	ApplyUnchanged = "unchanged" // overwrite, but the stored config is already the one given
	ApplyKept      = "kept"      // the job exists and overwrite is false: left as it is
)

// ApplyJob applies one job of a declarative jobs file with ElasticJob's overwrite semantics: a job that
// doesn't exist is created; an existing one is replaced only when cfg.Overwrite is set (and differs),
// otherwise left as it is. Several peers applying the same file at once agree: a create that loses the
// race falls back to the existing job.
func (s *Service) ApplyJob(ctx context.Context, cfg ejserver.JobConfig) (string, error) {
	if cfg.Webhook.GenerateSecret {
		return "", ejserver.Invalid("webhook.generateSecret", "can't be used in a jobs file (every start would rotate the secret): set webhook.secret, or generate one through the API")
	}
	cfg.Normalize()
	for attempt := 0; ; attempt++ {
		cur, _, err := s.reg.GetJob(cfg.JobName)
		if ejserver.IsNotFound(err) {
			_, _, err = s.CreateJob(ctx, cfg)
			if ejserver.ErrorCodeOf(err) == ejserver.ECONFLICT && attempt == 0 {
				continue // another peer created it a moment ago
			}
			if err != nil {
				return "", err
			}
			return ApplyCreated, nil
		}
		if err != nil {
			return "", err
		}
		if !cfg.Overwrite {
			return ApplyKept, nil
		}
		if sameConfig(cur, cfg) {
			return ApplyUnchanged, nil
		}
		if _, _, err := s.ReplaceJob(ctx, cfg.JobName, cfg, nil, nil); err != nil {
			return "", err
		}
		return ApplyReplaced, nil
	}
}

func keyOf(t *ejserver.WebhookTLS) string {
	if t == nil {
		return ""
	}
	return t.ClientKeyPem
}

// sameConfig reports whether stored equals the config a file asks for: the same JSON (which holds no
// secret) and, when the file gives a secret, the same secret (an absent one keeps the stored secret); the
// same for webhook.tls's client key.
func sameConfig(stored, want ejserver.JobConfig) bool {
	if !want.Webhook.SecretGiven() {
		want.Webhook.Secret = stored.Webhook.Secret
	}
	if want.Webhook.Secret != stored.Webhook.Secret {
		return false
	}
	want.Webhook.PreviousSecret = stored.Webhook.PreviousSecret
	want.Webhook.MergeTLS(stored.Webhook)
	if keyOf(want.Webhook.TLS) != keyOf(stored.Webhook.TLS) {
		return false
	}
	a, err1 := json.Marshal(stored)
	b, err2 := json.Marshal(want)
	return err1 == nil && err2 == nil && bytes.Equal(a, b)
}
