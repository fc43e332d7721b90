package api

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestWhoami(t *testing.T) {
	withTokens := New(Config{Service: &fakeService{}, Tokens: testTokens(t)})
	adminAll := Abilities{Operate: true, Manage: true, Cluster: true, Administer: true}
	open := New(Config{Service: &fakeService{}})
	tests := []struct {
		name       string
		h          http.Handler
		token      string
		wantStatus int
		want       Caller
	}{
		{"admin", withTokens, adminSecret, 200, Caller{Authenticated: true, Name: "ops", Role: RoleAdmin, CanWrite: true, Can: adminAll}},
		{"viewer", withTokens, viewerSecret, 200, Caller{Authenticated: true, Name: "grafana", Role: RoleViewer, Can: Abilities{Cluster: true}}},
		{"operator", withTokens, operatorSecret, 200, Caller{Authenticated: true, Name: "oncall", Role: RoleOperator, CanWrite: true,
			Can: Abilities{Operate: true, Cluster: true}}},
		{"scoped admin", withTokens, scopedAdminSecret, 200, Caller{Authenticated: true, Name: "team-a", Role: RoleAdmin,
			Scope: "prefix:team-a-|label:payments", CanWrite: true, Can: Abilities{Operate: true, Manage: true}}},
		{"no token", withTokens, "", 401, Caller{}},
		{"unknown token", withTokens, "not-a-token-0123456789", 401, Caller{}},
		{"open API", open, "", 200, Caller{Role: RoleAdmin, CanWrite: true, Can: adminAll}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodGet, "/api/v1/auth/whoami", nil)
			if tt.token != "" {
				req.Header.Set("Authorization", "Bearer "+tt.token)
			}
			rec := httptest.NewRecorder()
			tt.h.ServeHTTP(rec, req)
			if rec.Code != tt.wantStatus {
				t.Fatalf("status %d, want %d: %s", rec.Code, tt.wantStatus, rec.Body)
			}
			if tt.wantStatus != 200 {
				return
			}
			var got Caller
			if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}
