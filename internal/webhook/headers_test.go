package webhook

import (
	"strings"
	"testing"
)

func TestForbiddenHeader(t *testing.T) {
	forbidden := []string{"Host", "content-length", "Content-Type", "Transfer-Encoding", "connection",
		"webhook-id", "Webhook-Signature", "WEBHOOK-TIMESTAMP", "webhook-anything", "shardingContext",
		"ShardingContext", "User-Agent", "Keep-Alive", "Upgrade", "TE", "Trailer", "Expect",
		"", "X Bad", "X-Bad:", "Bad\r\nInjected", "naïve"}
	allowed := []string{"Authorization", "X-Team", "X-Request-Source", "Accept-Language", "Idempotency-Key"}
	for _, h := range forbidden {
		if !ForbiddenHeader(h) {
			t.Errorf("ForbiddenHeader(%q) = false", h)
		}
	}
	for _, h := range allowed {
		if ForbiddenHeader(h) {
			t.Errorf("ForbiddenHeader(%q) = true", h)
		}
	}
}

func TestCheckHeaders(t *testing.T) {
	if err := CheckHeaders(map[string]string{"Authorization": "Bearer x", "X-Tab": "a\tb"}); err != nil {
		t.Fatal(err)
	}
	for _, h := range []map[string]string{
		{"webhook-id": "x"},
		{"X-Ok": "line\r\nInjected: 1"},
		{"X-Ok": "nul\x00"},
	} {
		err := CheckHeaders(h)
		if err == nil {
			t.Errorf("CheckHeaders(%q) = nil", h)
			continue
		}
		for _, v := range h {
			if strings.Contains(err.Error(), v) {
				t.Errorf("error %q shows the header value", err)
			}
		}
	}
}
