package api

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ejserver/ejserver/internal/service"
)

// benchService answers the one read the benchmark makes, and the label of any job.
type benchService struct{ fakeService }

func (benchService) Sharding(context.Context, string) ([]service.ItemView, error) { return nil, nil }
func (benchService) JobLabel(context.Context, string) (string, error)             { return "payments", nil }

// What the token check and the scope check cost per request, with a tokens file of 100 lines:
// go test -run XXX -bench BenchmarkScopedRequest -benchmem ./api/
func BenchmarkScopedRequest(b *testing.B) {
	var file strings.Builder
	for i := range 97 {
		fmt.Fprintf(&file, "viewer v%d %s\n", i, HashToken(fmt.Sprintf("viewer-token-%016d", i)))
	}
	file.WriteString("admin ops admin-token-0123456789\n")
	file.WriteString("admin prefixed prefixed-token-0123456789 scope=prefix:team-a-\n")
	file.WriteString("admin labelled labelled-token-0123456789 scope=label:payments\n")
	toks, err := ParseTokens(strings.NewReader(file.String()))
	if err != nil {
		b.Fatal(err)
	}
	h := New(Config{Service: &benchService{}, Tokens: toks, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	for _, bb := range []struct{ name, token string }{
		{"unscoped", "admin-token-0123456789"},
		{"prefix", "prefixed-token-0123456789"},
		{"label", "labelled-token-0123456789"},
	} {
		b.Run(bb.name, func(b *testing.B) {
			req := httptest.NewRequest(http.MethodGet, "/api/v1/jobs/team-a-1/sharding", nil)
			req.Header.Set("Authorization", "Bearer "+bb.token)
			for b.Loop() {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != 200 {
					b.Fatalf("status %d: %s", rec.Code, rec.Body)
				}
			}
		})
	}
}
