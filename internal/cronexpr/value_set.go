package cronexpr

import "math/bits"

// valueSet is a set of small non-negative integers (0-191): the values one cron field allows. It stands in
// for the TreeSet Quartz keeps per field; next is TreeSet.tailSet(v).first().
type valueSet [3]uint64

const valueSetLimit = 3 * 64

func (s *valueSet) add(v int) {
	s[v/64] |= 1 << (v % 64)
}

func (s valueSet) has(v int) bool {
	return v >= 0 && v < valueSetLimit && s[v/64]&(1<<(v%64)) != 0
}

// next returns the smallest value in the set that is at least v.
func (s valueSet) next(v int) (int, bool) {
	if v < 0 {
		v = 0
	}
	for w := v / 64; w < len(s); w++ {
		word := s[w]
		if w == v/64 {
			word &= ^uint64(0) << (v % 64)
		}
		if word != 0 {
			return w*64 + bits.TrailingZeros64(word), true
		}
	}
	return 0, false
}

// first returns the smallest value; the set must not be empty.
func (s valueSet) first() int {
	v, _ := s.next(0)
	return v
}

// count returns the number of values in the set.
func (s valueSet) count() int {
	return bits.OnesCount64(s[0]) + bits.OnesCount64(s[1]) + bits.OnesCount64(s[2])
}

// values lists the set in ascending order.
func (s valueSet) values() []int {
	var out []int
	for v, ok := s.next(0); ok; v, ok = s.next(v + 1) {
		out = append(out, v)
	}
	return out
}
