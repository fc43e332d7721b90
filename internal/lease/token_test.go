package lease

import (
	"strings"
	"testing"
)

func TestToken(t *testing.T) {
	secret := []byte(strings.Repeat("k", 32))
	tok := Token(secret, "exec-1", 0, 2)
	if !strings.HasPrefix(tok, "ejcb1.0.2.") {
		t.Fatalf("token %q", tok)
	}
	it, at, err := Verify(secret, "exec-1", tok)
	if err != nil || it != 0 || at != 2 {
		t.Fatalf("Verify = %d %d %v", it, at, err)
	}
	forged := "ejcb1.0.3." + strings.Split(tok, ".")[3] // the MAC of attempt 2 with attempt 3's number
	bad := []struct{ name, id, tok string }{
		{"other execution", "exec-2", tok},
		{"other attempt", "exec-1", forged},
		{"other secret", "exec-1", Token([]byte(strings.Repeat("x", 32)), "exec-1", 0, 2)},
		{"empty", "exec-1", ""},
		{"API token", "exec-1", "s3cret-admin-token"},
		{"truncated", "exec-1", tok[:len(tok)-4]},
		{"extra part", "exec-1", tok + ".x"},
		{"attempt 0", "exec-1", Token(secret, "exec-1", 0, 0)},
		{"negative iteration", "exec-1", Token(secret, "exec-1", -1, 1)},
	}
	for _, b := range bad {
		if _, _, err := Verify(secret, b.id, b.tok); err == nil {
			t.Errorf("%s: verified", b.name)
		}
	}
	if _, _, err := Verify(nil, "exec-1", tok); err == nil {
		t.Error("verified without a secret")
	}
}

func FuzzVerify(f *testing.F) {
	secret := []byte(strings.Repeat("k", 32))
	f.Add("exec-1", Token(secret, "exec-1", 0, 1))
	f.Add("exec-1", "ejcb1.1.1.AAAA")
	f.Add("", "ejcb1...")
	f.Fuzz(func(t *testing.T, id, tok string) {
		it, at, err := Verify(secret, id, tok)
		if err == nil && Token(secret, id, it, at) != tok {
			t.Fatalf("verified %q for %q but it is not the token minted for %d/%d", tok, id, it, at)
		}
	})
}
