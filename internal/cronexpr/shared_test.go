package cronexpr

import (
	"runtime"
	"testing"
	"time"
)

func TestParseSharedSharesAndForgets(t *testing.T) {
	loc, err := LoadLocation("Asia/Shanghai")
	if err != nil {
		t.Fatal(err)
	}
	a, err := ParseShared("0/5 * * * * ?", loc)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := ParseShared(" 0/5 * * * * ? ", loc)
	c, _ := ParseShared("0/5 * * * * ?", time.UTC)
	d, _ := ParseShared("0/6 * * * * ?", loc)
	if a != b {
		t.Fatal("the same expression and location were parsed twice")
	}
	if a == c || a == d {
		t.Fatal("another location or expression shares a schedule")
	}
	from := time.Date(2026, 11, 22, 10, 0, 1, 0, loc)
	if got, want := a.Next(from), time.Date(2026, 11, 22, 10, 0, 5, 0, loc); !got.Equal(want) {
		t.Fatalf("next %v, want %v", got, want)
	}
	if _, err := ParseShared("0/5 * * *", loc); err == nil {
		t.Fatal("a bad expression parsed")
	}

	// once nobody holds them, the schedules go and so do their entries
	a, b, c, d = nil, nil, nil, nil
	_, _, _, _ = a, b, c, d
	deadline := time.Now().Add(10 * time.Second)
	for {
		runtime.GC()
		n := 0
		shared.Range(func(any, any) bool { n++; return true })
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d entries left after the schedules were dropped", n)
		}
		<-time.After(10 * time.Millisecond)
	}
}
