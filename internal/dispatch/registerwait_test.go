package dispatch

import (
	"errors"
	"testing"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/cluster"
)

func TestAwaitsRegistration(t *testing.T) {
	cases := []struct {
		name                    string
		registered, registering bool
		disabled                bool
		cfgErr                  error
		want                    bool
	}{
		{name: "registered", registered: true, want: false},
		{name: "registration under way", registering: true, want: true},
		{name: "removed by an operator", want: false},
		{name: "disabled job: skipped as disabled at once", registering: true, disabled: true, want: false},
		{name: "unparsable config: skipped at once", registering: true, cfgErr: errors.New("bad"), want: false},
	}
	for _, c := range cases {
		s := &cluster.JobSnapshot{Registered: c.registered, Registering: c.registering, ConfigErr: c.cfgErr,
			Config: &ejserver.JobConfig{Disabled: c.disabled}}
		if got := awaitsRegistration(s); got != c.want {
			t.Errorf("%s: awaitsRegistration = %v, want %v", c.name, got, c.want)
		}
	}
}
