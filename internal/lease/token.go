package lease

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"hash"
	"strconv"
	"strings"
	"sync"
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

// Minter mints the tokens of one secret, as Token does, keeping its HMAC states for reuse: every request a
// peer sends carries a token, and a new HMAC-SHA256 (two hashes and the key's pads) plus the message's and
// the token's strings built in pieces was ~11 allocations per request; a Minter's token is one.
type Minter struct {
	macs sync.Pool // of *minterMAC, keyed by the secret
}

// minterMAC is an HMAC state and its scratch space (which would escape to the heap through the hash's
// interface if it were on the stack).
type minterMAC struct {
	h   hash.Hash
	msg []byte
	sum []byte
}

// NewMinter returns a Minter of secret (not copied: it must not change).
func NewMinter(secret []byte) *Minter {
	return &Minter{macs: sync.Pool{New: func() any {
		return &minterMAC{h: hmac.New(sha256.New, secret), msg: make([]byte, 0, 128), sum: make([]byte, 0, sha256.Size)}
	}}}
}

// Token returns Token(secret, executionID, iteration, attempt).
func (m *Minter) Token(executionID string, iteration, attempt int) string {
	mm := m.macs.Get().(*minterMAC)
	defer m.macs.Put(mm)
	mm.h.Reset()
	b := append(mm.msg[:0], "ejserver-callback\x00"...)
	b = append(b, executionID...)
	b = append(b, 0)
	b = strconv.AppendInt(b, int64(iteration), 10)
	b = append(b, 0)
	b = strconv.AppendInt(b, int64(attempt), 10)
	mm.h.Write(b)
	mm.msg = b[:0]
	mm.sum = mm.h.Sum(mm.sum[:0])
	var tok [len(tokenPrefix) + 2*20 + 2 + 43]byte // the prefix, two ints, two dots, the MAC in base64
	t := append(tok[:0], tokenPrefix...)
	t = strconv.AppendInt(t, int64(iteration), 10)
	t = append(t, '.')
	t = strconv.AppendInt(t, int64(attempt), 10)
	t = append(t, '.')
	t = base64.RawURLEncoding.AppendEncode(t, mm.sum)
	return string(t)
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
