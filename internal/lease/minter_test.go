package lease

import (
	"strings"
	"testing"
)

// A Minter's tokens are Token's, byte for byte, and verify.
func FuzzMinterMatchesToken(f *testing.F) {
	f.Add("0192f5e4-7b1a-7cc3-9d2e-3f4a5b6c7d8e", 0, 1)
	f.Add(strings.Repeat("x", 300), -1<<62, 1<<62)
	f.Add("", 7, -3)
	secret := []byte(strings.Repeat("s", MinSecretLen))
	m := NewMinter(secret)
	f.Fuzz(func(t *testing.T, executionID string, iteration, attempt int) {
		want := Token(secret, executionID, iteration, attempt)
		if got := m.Token(executionID, iteration, attempt); got != want {
			t.Fatalf("Minter %q, Token %q", got, want)
		}
		if iteration >= 0 && attempt >= 1 {
			if it, at, err := Verify(secret, executionID, want); err != nil || it != iteration || at != attempt {
				t.Fatalf("Verify: %d %d %v", it, at, err)
			}
		}
	})
}

// Minting a token allocates the token's string alone (Token: ~11 allocations).
func TestMinterAllocatesTheTokenAlone(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	m := NewMinter([]byte(strings.Repeat("s", MinSecretLen)))
	m.Token("warm", 0, 1)
	if got := testing.AllocsPerRun(100, func() { m.Token("0192f5e4-7b1a-7cc3-9d2e-3f4a5b6c7d8e", 0, 1) }); got > 1 {
		t.Errorf("a token takes %.0f allocations, want 1", got)
	}
}
