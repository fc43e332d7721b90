package client_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/ejserver/ejserver/client"
)

// fakeChannels answers the channel routes like ejserver does: secrets are write-only.
func fakeChannels() *httptest.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/v1/channels", func(w http.ResponseWriter, r *http.Request) {
		var ch map[string]any
		_ = json.NewDecoder(r.Body).Decode(&ch)
		ch["slack"] = map[string]any{"hasUrl": true}
		w.Header().Set("ETag", `"0"`)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(ch)
	})
	mux.HandleFunc("POST /api/v1/channels/{name}/test", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"channel": r.PathValue("name"), "notificationId": "6f0e",
			"outcome": "sent", "attempts": 1, "status": 200, "durationMs": 180})
	})
	return httptest.NewServer(mux)
}

// Create a Slack channel and send a test notification through it. The webhook URL (it holds Slack's token)
// is write-only: the answer only says it is set.
func ExampleClient_CreateChannel() {
	srv := fakeChannels()
	defer srv.Close()
	ctx := context.Background()
	c := client.New(srv.URL, client.WithToken("example-admin-token"))

	url := "https://hooks.slack.com/services/T000/B000/XXXX"
	ch, err := c.CreateChannel(ctx, client.Channel{Name: "ops-slack", Kind: "slack", Default: true,
		Slack: &client.SlackChannel{URL: &url}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(ch.Name, ch.Slack.HasURL, ch.Slack.URL == nil, ch.ETag)
	res, err := c.TestChannel(ctx, "ops-slack")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Outcome, res.Status)
	// Output:
	// ops-slack true true "0"
	// sent 200
}
