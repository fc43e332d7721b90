package deploy

import (
	"os/exec"
	"strings"
	"testing"
)

// The rules load in Prometheus (promtool check rules) and fire on what they should (promtool test rules,
// ejserver-rules.test.yaml). That they name only metrics the server registers is tested in the server's
// module (internal/metrics), against its registry.
func TestPrometheusRules(t *testing.T) {
	promtool := need(t, "promtool")
	for _, args := range [][]string{
		{"check", "rules", "prometheus/ejserver-rules.yaml"},
		{"test", "rules", "prometheus/ejserver-rules.test.yaml"},
	} {
		out, err := exec.Command(promtool, args...).CombinedOutput()
		t.Logf("promtool %s:\n%s", strings.Join(args, " "), strings.TrimSpace(string(out)))
		if err != nil || !strings.Contains(string(out), "SUCCESS") {
			t.Errorf("promtool %s: %v", strings.Join(args, " "), err)
		}
	}
}
