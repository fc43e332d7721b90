package notify

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/webhook"
)

// TestValidateFieldErrors: each bad channel names the offending field, and no message repeats a secret.
func TestValidateFieldErrors(t *testing.T) {
	const token = "xoxb-VERY-SECRET-token"
	tests := []struct {
		name, body, field string
	}{
		{"no name", `{"kind":"slack","slack":{"url":"https://h.example.com/` + token + `"}}`, "name"},
		{"slash in name", `{"name":"a/b","kind":"slack","slack":{"url":"https://h.example.com/x"}}`, "name"},
		{"long name", `{"name":"` + strings.Repeat("a", 65) + `","kind":"slack","slack":{"url":"https://h.example.com/x"}}`, "name"},
		{"unknown kind", `{"name":"a","kind":"sms"}`, "kind"},
		{"missing settings", `{"name":"a","kind":"slack"}`, "slack"},
		{"other kind's settings", `{"name":"a","kind":"slack","slack":{"url":"https://h.example.com/x"},"email":{}}`, "email"},
		{"slack http", `{"name":"a","kind":"slack","slack":{"url":"http://hooks.example.com/` + token + `"}}`, "slack.url"},
		{"slack not a URL", `{"name":"a","kind":"slack","slack":{"url":"https://exa mple.com/%zz` + token + `"}}`, "slack.url"},
		{"slack credentials", `{"name":"a","kind":"slack","slack":{"url":"https://u:` + token + `@h.example.com/"}}`, "slack.url"},
		{"slack missing url", `{"name":"a","kind":"slack","slack":{}}`, "slack.url"},
		{"webhook bad secret", `{"name":"a","kind":"webhook","webhook":{"url":"https://h.example.com","secret":"` + token + `"}}`, "webhook.secret"},
		{"webhook ftp", `{"name":"a","kind":"webhook","webhook":{"url":"ftp://h.example.com"}}`, "webhook.url"},
		{"dingtalk secret spaces", `{"name":"a","kind":"dingtalk","dingtalk":{"url":"https://oapi.dingtalk.com/robot/send?access_token=x","secret":"SEC ` + token + `"}}`, "dingtalk.secret"},
		{"dingtalk mobile", `{"name":"a","kind":"dingtalk","dingtalk":{"url":"https://oapi.dingtalk.com/robot/send","atMobiles":["13x"]}}`, "dingtalk.atMobiles[0]"},
		{"wecom missing url", `{"name":"a","kind":"wecom","wecom":{}}`, "wecom.url"},
		{"pagerduty key", `{"name":"a","kind":"pagerduty","pagerduty":{}}`, "pagerduty.routingKey"},
		{"pagerduty url", `{"name":"a","kind":"pagerduty","pagerduty":{"routingKey":"k","url":"http://events.example.com"}}`, "pagerduty.url"},
		{"email host", `{"name":"a","kind":"email","email":{"from":"a@example.com","to":["b@example.com"]}}`, "email.host"},
		{"email port", `{"name":"a","kind":"email","email":{"host":"smtp.example.com","port":70000,"from":"a@example.com","to":["b@example.com"]}}`, "email.port"},
		{"email tls", `{"name":"a","kind":"email","email":{"host":"smtp.example.com","tls":"ssl","from":"a@example.com","to":["b@example.com"]}}`, "email.tls"},
		{"email clear password", `{"name":"a","kind":"email","email":{"host":"smtp.example.com","tls":"none","username":"u","password":"` + token + `","from":"a@example.com","to":["b@example.com"]}}`, "email.tls"},
		{"email password alone", `{"name":"a","kind":"email","email":{"host":"smtp.example.com","password":"` + token + `","from":"a@example.com","to":["b@example.com"]}}`, "email.username"},
		{"email from", `{"name":"a","kind":"email","email":{"host":"smtp.example.com","from":"nobody","to":["b@example.com"]}}`, "email.from"},
		{"email to", `{"name":"a","kind":"email","email":{"host":"smtp.example.com","from":"a@example.com","to":[]}}`, "email.to"},
		{"email to item", `{"name":"a","kind":"email","email":{"host":"smtp.example.com","from":"a@example.com","to":["b@example.com","x\r\nBcc: y"]}}`, "email.to[1]"},
		{"email auth", `{"name":"a","kind":"email","email":{"host":"smtp.example.com","auth":"cram-md5","username":"u","password":"p","from":"a@example.com","to":["b@example.com"]}}`, "email.auth"},
		{"timeout", `{"name":"a","kind":"slack","timeoutMs":99999999,"slack":{"url":"https://h.example.com/x"}}`, "timeoutMs"},
		{"attempts", `{"name":"a","kind":"slack","maxAttempts":11,"slack":{"url":"https://h.example.com/x"}}`, "maxAttempts"},
		{"unknown field", `{"name":"a","kind":"slack","colour":"red"}`, "colour"},
		{"wrong type", `{"name":"a","kind":"slack","timeoutMs":"5s"}`, "timeoutMs"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := DecodeChannel([]byte(tc.body))
			if err == nil {
				err = c.Validate()
			}
			var e *ejserver.Error
			if !errors.As(err, &e) || e.Code != ejserver.EINVALID {
				t.Fatalf("error %v, want EINVALID", err)
			}
			found := false
			for _, f := range e.Fields {
				found = found || f.Field == tc.field
			}
			if !found {
				t.Errorf("fields %+v, want %q among them", e.Fields, tc.field)
			}
			if strings.Contains(err.Error(), token) || strings.Contains(err.Error(), "VERY-SECRET") {
				t.Errorf("the error repeats a secret: %v", err)
			}
		})
	}
}

// TestValidChannels: one good channel of each kind passes, and Normalize fills the defaults.
func TestValidChannels(t *testing.T) {
	for _, body := range []string{
		`{"name":"hook","kind":"webhook","webhook":{"url":"https://r.example.com/a","secret":"` + webhook.GenerateSecret() + `"}}`,
		`{"name":"local","kind":"webhook","webhook":{"url":"http://127.0.0.1:8080/a"}}`,
		`{"name":"ops.slack","kind":"slack","default":true,"slack":{"url":"https://hooks.slack.com/services/T/B/X"}}`,
		`{"name":"ding","kind":"dingtalk","dingtalk":{"url":"https://oapi.dingtalk.com/robot/send?access_token=x","secret":"SECx","atMobiles":["+8613800000000"]}}`,
		`{"name":"wecom","kind":"wecom","wecom":{"url":"https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=k"}}`,
		`{"name":"pd","kind":"pagerduty","pagerduty":{"routingKey":"R0UT1NGKEY"}}`,
		`{"name":"mail","kind":"email","email":{"host":"smtp.example.com","username":"u","password":"p","from":"ejserver <a@example.com>","to":["b@example.com"]}}`,
		`{"name":"relay","kind":"email","email":{"host":"127.0.0.1","tls":"none","username":"u","password":"p","from":"a@example.com","to":["b@example.com"]}}`,
	} {
		c, err := DecodeChannel([]byte(body))
		if err == nil {
			err = c.Validate()
		}
		if err != nil {
			t.Errorf("%s: %v", body, err)
			continue
		}
		c.Normalize()
		if c.TimeoutMs != DefaultTimeoutMs || c.MaxAttempts != DefaultMaxAttempts {
			t.Errorf("%s: defaults %d %d", body, c.TimeoutMs, c.MaxAttempts)
		}
		if c.Email != nil && c.Name == "mail" && (c.Email.Port != 587 || c.Email.TLS != TLSStartTLS || c.Email.Auth != "plain") {
			t.Errorf("email defaults %+v", c.Email)
		}
		if c.PagerDuty != nil && c.PagerDuty.URL != DefaultPagerDutyURL {
			t.Errorf("pagerduty url %q", c.PagerDuty.URL)
		}
	}
}

// TestSecretsAreWriteOnly: output has hasXxx and no secret; a replace that leaves a secret out keeps it, ""
// removes it, and hasXxx copied from a GET is ignored.
func TestSecretsAreWriteOnly(t *testing.T) {
	stored := Channel{Name: "d", Kind: ChannelDingTalk, DingTalk: &DingTalkSettings{URL: sp("https://oapi.dingtalk.com/robot/send?access_token=T0K"), Secret: sp("SECRET1")}}
	out, err := json.Marshal(stored.Redacted())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), "T0K") || strings.Contains(string(out), "SECRET1") ||
		!strings.Contains(string(out), `"hasUrl":true`) || !strings.Contains(string(out), `"hasSecret":true`) {
		t.Fatalf("redacted %s", out)
	}
	if stored.DingTalk.URL == nil {
		t.Fatal("Redacted changed the original")
	}
	// the GET body PUT back: secrets kept
	back, err := DecodeChannel(out)
	if err != nil {
		t.Fatal(err)
	}
	back.KeepSecrets(stored)
	if str(back.DingTalk.URL) != str(stored.DingTalk.URL) || str(back.DingTalk.Secret) != "SECRET1" || back.DingTalk.HasURL {
		t.Fatalf("kept %+v", back.DingTalk)
	}
	// "" removes the signing secret
	rm, _ := DecodeChannel([]byte(`{"name":"d","kind":"dingtalk","dingtalk":{"secret":""}}`))
	rm.KeepSecrets(stored)
	if str(rm.DingTalk.Secret) != "" || str(rm.DingTalk.URL) == "" {
		t.Fatalf("after removing the secret %+v", rm.DingTalk)
	}
	if got := stored.Scrub("dial https://oapi.dingtalk.com/robot/send?access_token=T0K&sign=x failed (SECRET1)"); strings.Contains(got, "T0K") || strings.Contains(got, "SECRET1") {
		t.Fatalf("scrub left a secret: %s", got)
	}
}

// FuzzDecodeValidate: no input panics the decoder or the validator; an accepted channel's errors and
// redacted output never hold its secrets, and it renders.
func FuzzDecodeValidate(f *testing.F) {
	f.Add(`{"name":"a","kind":"slack","slack":{"url":"https://h.example.com/x"}}`)
	f.Add(`{"name":"m","kind":"email","email":{"host":"h","from":"a@b.c","to":["d@e.f"],"username":"u","password":"p"}}`)
	f.Add(`{"name":"d","kind":"dingtalk","dingtalk":{"url":"https://x/y?z=1","secret":"S","atMobiles":["1"]}}`)
	f.Add(`{"name":"p","kind":"pagerduty","pagerduty":{"routingKey":"k","url":"https://e.example.com"}}`)
	f.Add(`{"name":"w","kind":"wecom","wecom":{"url":"https://x","mentionedMobiles":["+1"]}}`)
	f.Add(`{"name":"h","kind":"webhook","webhook":{"url":"http://127.0.0.1/"}}`)
	f.Fuzz(func(t *testing.T, body string) {
		c, err := DecodeChannel([]byte(body))
		if err != nil {
			return
		}
		if err := c.Validate(); err != nil {
			for _, s := range c.Secrets() {
				if len(s) >= 8 && strings.Contains(err.Error(), s) {
					t.Fatalf("error %q holds secret %q", err, s)
				}
			}
			return
		}
		c.Normalize()
		out, err := json.Marshal(c.Redacted())
		if err != nil {
			t.Fatal(err)
		}
		back, err := DecodeChannel(out)
		if err != nil {
			t.Fatalf("the redacted output %s does not decode: %v", out, err)
		}
		if s := back.Secrets(); len(s) > 0 {
			t.Fatalf("redacted %s holds secrets %q", out, s)
		}
		if c.Kind == ChannelEmail {
			if _, err := RenderEmail(c, fireFailed()); err != nil {
				t.Fatal(err)
			}
		} else if _, err := Render(c, fireFailed(), renderNow); err != nil {
			t.Fatal(err)
		}
	})
}
