package notify

import "math/rand/v2"

type globalRand struct{}

func (globalRand) Int64N(n int64) int64 { return rand.Int64N(n) }
