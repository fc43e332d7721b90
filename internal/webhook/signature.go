package webhook

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// SecretPrefix starts every signing secret, as in Standard Webhooks.
const SecretPrefix = "whsec_"

// Bounds of a secret's key, from the Standard Webhooks spec ("between 24 bytes and 64 bytes").
const (
	MinSecretBytes = 24
	MaxSecretBytes = 64
)

// ErrInvalidSecret is returned for a secret that is not "whsec_" + standard base64 of 24 to 64 bytes.
var ErrInvalidSecret = errors.New("invalid webhook secret")

// GenerateSecret returns a new signing secret: "whsec_" + base64 of 32 random bytes.
func GenerateSecret() string {
	key := make([]byte, 32)
	_, _ = rand.Read(key) // crypto/rand.Read never fails (it crashes the program instead)
	return SecretPrefix + base64.StdEncoding.EncodeToString(key)
}

// ParseSecret decodes a secret into its HMAC key. The error never contains the secret.
func ParseSecret(secret string) ([]byte, error) {
	b64, ok := strings.CutPrefix(secret, SecretPrefix)
	if !ok {
		return nil, fmt.Errorf("%w: must start with %q", ErrInvalidSecret, SecretPrefix)
	}
	key, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return nil, fmt.Errorf("%w: the part after %q is not standard base64", ErrInvalidSecret, SecretPrefix)
	}
	if len(key) < MinSecretBytes || len(key) > MaxSecretBytes {
		return nil, fmt.Errorf("%w: key is %d bytes, want %d to %d", ErrInvalidSecret, len(key), MinSecretBytes,
			MaxSecretBytes)
	}
	return key, nil
}

// Sign returns the Standard Webhooks signature "v1,<base64 HMAC-SHA256 of {id}.{timestamp}.{body}>".
func Sign(key []byte, id string, timestamp int64, body []byte) string {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id))
	mac.Write([]byte{'.'})
	mac.Write(strconv.AppendInt(nil, timestamp, 10))
	mac.Write([]byte{'.'})
	mac.Write(body)
	var sum [sha256.Size]byte
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(sum[:0]))
}

// SignatureHeader returns the webhook-signature value for the given secrets (space-separated signatures,
// one per secret, in order), or "" when there is no secret.
func SignatureHeader(secrets []string, id string, timestamp int64, body []byte) (string, error) {
	sigs := make([]string, 0, len(secrets))
	for _, s := range secrets {
		key, err := ParseSecret(s)
		if err != nil {
			return "", err
		}
		sigs = append(sigs, Sign(key, id, timestamp, body))
	}
	return strings.Join(sigs, " "), nil
}
