package client_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/ejserver/ejserver/client"
)

func TestErrorsCarryTheProblem(t *testing.T) {
	srv := fakeEjserver()
	defer srv.Close()
	ctx := context.Background()

	_, err := client.New(srv.URL).GetJob(ctx, "settle")
	var e *client.Error
	if !errors.As(err, &e) || e.Status != 401 || e.Type != "https://ejserver.dev/problems/unauthorized" || e.Detail == "" {
		t.Fatalf("no token: %#v", err)
	}

	// an answer that is not problem+json (a proxy's page) still becomes an *Error with its status
	html := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusBadGateway)
		w.Write([]byte("<html>bad gateway</html>"))
	}))
	defer html.Close()
	_, err = client.New(html.URL).GetJob(ctx, "settle")
	if client.StatusOf(err) != http.StatusBadGateway || !errors.As(err, &e) || e.Detail != "<html>bad gateway</html>" {
		t.Fatalf("proxy error: %#v", err)
	}

	// a transport error is not an *Error
	html.Close()
	_, err = client.New(html.URL).GetJob(ctx, "settle")
	if err == nil || client.StatusOf(err) != 0 {
		t.Fatalf("transport error: %#v", err)
	}
}
