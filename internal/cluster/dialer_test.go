package cluster

import (
	"context"
	"io"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/ejserver/ejserver/internal/testutil/zktest"
)

func TestCapDeadline(t *testing.T) {
	now := time.Date(2026, 11, 24, 23, 0, 0, 0, time.UTC)
	tests := []struct {
		name  string
		t     time.Time
		limit time.Duration
		want  time.Time
	}{
		{"no deadline stays none", time.Time{}, 4 * time.Second, time.Time{}},
		{"within the limit", now.Add(2 * time.Second), 4 * time.Second, now.Add(2 * time.Second)},
		{"at the limit", now.Add(4 * time.Second), 4 * time.Second, now.Add(4 * time.Second)},
		{"beyond: capped (go-zookeeper's handshake)", now.Add(26 * time.Second), 4 * time.Second, now.Add(4 * time.Second)},
		{"in the past stays", now.Add(-time.Second), 4 * time.Second, now.Add(-time.Second)},
		{"no limit", now.Add(time.Hour), 0, now.Add(time.Hour)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := capDeadline(tt.t, now, tt.limit); !got.Equal(tt.want) {
				t.Fatalf("capDeadline = %v, want %v", got, tt.want)
			}
		})
	}
}

// A server that accepts a connection and never answers its connect request (a ZooKeeper that is starting)
// costs the client one session timeout, not go-zookeeper's ten receive timeouts (13.3 s for a 2 s session):
// the next try reaches the real server and the session is granted well within the 10 s the test allows.
func TestDialGetsPastAServerThatNeverAnswers(t *testing.T) {
	t.Parallel()
	zkAddr := zktest.Addr(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		conns []net.Conn
		wg    sync.WaitGroup
	)
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() { // the first connection is held unanswered; the others are passed to ZooKeeper
		defer wg.Done()
		for n := 0; ; n++ {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			if n == 0 {
				continue
			}
			up, err := net.Dial("tcp", zkAddr)
			if err != nil {
				c.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, up)
			mu.Unlock()
			wg.Add(2)
			go func() { defer wg.Done(); _, _ = io.Copy(up, c); up.Close() }()
			go func() { defer wg.Done(); _, _ = io.Copy(c, up); c.Close() }()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := Dial(ctx, SessionConfig{Servers: []string{ln.Addr().String()}, SessionTimeout: 2 * time.Second,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatalf("no session past a server that never answered: %v", err)
	}
	s.Close()
}
