package main

import (
	"slices"
	"testing"
	"time"
)

func TestBusiest(t *testing.T) {
	tests := []struct {
		v    []int64
		n    int
		want []int
	}{
		{[]int64{0, 3, 0, 7, 3, 1}, 3, []int{3, 1, 4}},
		{[]int64{0, 0}, 5, []int{}},
		{[]int64{2, 2, 2}, 2, []int{0, 1}},
	}
	for _, tt := range tests {
		if got := busiest(tt.v, tt.n); !slices.Equal(got, tt.want) && !(len(got) == 0 && len(tt.want) == 0) {
			t.Errorf("busiest(%v, %d) = %v, want %v", tt.v, tt.n, got, tt.want)
		}
	}
}

func TestSpanOf(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"24h", 24 * time.Hour, true},
		{"7d", 7 * 24 * time.Hour, true},
		{"90s", 90 * time.Second, true},
		{"d", 0, false},
		{"0d", 0, false},
		{"-5m", 0, false},
		{"soon", 0, false},
	}
	for _, tt := range tests {
		got, err := spanOf("window", tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("spanOf(%q) = %v, %v", tt.in, got, err)
		}
	}
}
