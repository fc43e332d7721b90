package workflow

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestItemOutput(t *testing.T) {
	t.Parallel()
	big := `{"output":"` + strings.Repeat("x", MaxOutputSize) + `"}`
	tests := []struct{ body, want string }{
		{`{"output":{"rows": 3}}`, `{"rows":3}`},
		{`{"ok":true,"output":[1, 2]}`, `[1,2]`},
		{`{"output":"done"}`, `"done"`},
		{`{"output":null}`, ``},
		{`{"ok":true}`, ``},
		{`not json`, ``},
		{`{"output":{"cut`, ``}, // an excerpt cut short
		{big, ``},
		{``, ``},
	}
	for _, tt := range tests {
		if got := string(ItemOutput(tt.body)); got != tt.want {
			t.Errorf("ItemOutput(%.40q) = %q, want %q", tt.body, got, tt.want)
		}
	}
}

func TestNodeOutput(t *testing.T) {
	t.Parallel()
	out, ok := NodeOutput(map[int]json.RawMessage{0: json.RawMessage(`{"a":1}`), 2: json.RawMessage(`"x"`)})
	if !ok || string(out) != `{"0":{"a":1},"2":"x"}` {
		t.Fatalf("NodeOutput = %s, %v", out, ok)
	}
	if out, ok := NodeOutput(nil); !ok || out != nil {
		t.Fatalf("no outputs: %s, %v", out, ok)
	}
	many := map[int]json.RawMessage{}
	for i := range 10 {
		many[i] = json.RawMessage(`"` + strings.Repeat("y", 500) + `"`)
	}
	if out, ok := NodeOutput(many); ok || out != nil {
		t.Fatalf("outputs over %d bytes kept: %d bytes", MaxOutputSize, len(out))
	}
}
