package lease

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
)

// tokenPrefix starts every callback token, so one is told apart from an API token at a glance.
const tokenPrefix = "ejcb1."

// MinSecretLen is the shortest cluster callback secret accepted.
const MinSecretLen = 32

// ErrBadToken: the callback token is malformed, or was not minted for this execution by this cluster.
var ErrBadToken = errors.New("callback token is not valid for this execution")

// Token mints the callback token of one request of an execution: "ejcb1.{iteration}.{attempt}.{mac}", the
// MAC an HMAC-SHA256 keyed by the cluster's callback secret over the execution id, the iteration and the
// attempt. Any peer holding the secret can verify it; a token authorises that request's callbacks and
// nothing else (it is not an API credential), and a token of another attempt is told apart by its numbers.
func Token(secret []byte, executionID string, iteration, attempt int) string {
	return tokenPrefix + strconv.Itoa(iteration) + "." + strconv.Itoa(attempt) + "." +
		base64.RawURLEncoding.EncodeToString(tokenMAC(secret, executionID, iteration, attempt))
}

func tokenMAC(secret []byte, executionID string, iteration, attempt int) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("ejserver-callback\x00" + executionID + "\x00" + strconv.Itoa(iteration) + "\x00" + strconv.Itoa(attempt)))
	return m.Sum(nil)
}

// Verify checks token against executionID and returns the iteration and attempt it was minted for.
func Verify(secret []byte, executionID, token string) (iteration, attempt int, err error) {
	rest, ok := strings.CutPrefix(token, tokenPrefix)
	if !ok || len(secret) == 0 {
		return 0, 0, ErrBadToken
	}
	parts := strings.Split(rest, ".")
	if len(parts) != 3 {
		return 0, 0, ErrBadToken
	}
	iteration, err1 := strconv.Atoi(parts[0])
	attempt, err2 := strconv.Atoi(parts[1])
	mac, err3 := base64.RawURLEncoding.DecodeString(parts[2])
	if err1 != nil || err2 != nil || err3 != nil || iteration < 0 || attempt < 1 || len(mac) != sha256.Size {
		return 0, 0, ErrBadToken
	}
	if !hmac.Equal(mac, tokenMAC(secret, executionID, iteration, attempt)) {
		return 0, 0, ErrBadToken
	}
	return iteration, attempt, nil
}
