package receiver_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ejserver/ejserver/receiver"
)

// Verify a request by hand with the job's secret (as the create response showed it) and the raw body.
func ExampleVerify() {
	secret := "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	body := []byte(`{"jobName":"settle","shardingItem":2}`)
	h := http.Header{}
	h.Set("webhook-id", "0192f5e4-7b1a-7cc3-9d2e-3f4a5b6c7d8e")
	h.Set("webhook-timestamp", strconv.FormatInt(time.Now().Unix(), 10))
	h.Set("webhook-signature", signForExample(secret, h, body))

	fmt.Println(receiver.Verify(secret, h, body))
	fmt.Println(receiver.Verify(secret, h, []byte(`{"jobName":"tampered"}`)))
	// Output:
	// <nil>
	// no webhook-signature matches
}

// A receiver for a SIMPLE job: verified, decoded and deduplicated deliveries reach the function once.
func ExampleHandler() {
	h := receiver.Handler(receiver.Options{ /* Secret: os.Getenv("WEBHOOK_SECRET") */ },
		func(ctx context.Context, d receiver.Delivery) (receiver.Response, error) {
			p := d.Payload
			fmt.Printf("%s item %d/%d (%s), attempt %d\n", p.JobName, p.ShardingItem, p.ShardingTotalCount,
				p.ShardingParameter, p.Attempt)
			return receiver.Response{}, nil
		})
	srv := httptest.NewServer(h) // in a service: http.ListenAndServe("127.0.0.1:9090", h)
	defer srv.Close()

	body := `{"jobName":"settle","executionId":"e1","shardingItem":2,"shardingParameter":"Guangzhou","shardingTotalCount":4,"attempt":1}`
	for range 2 { // the second is a duplicate: answered 200 without calling the function
		req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(body))
		req.Header.Set("webhook-id", "e1")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			log.Fatal(err)
		}
		resp.Body.Close()
		fmt.Println(resp.StatusCode)
	}
	// Output:
	// settle item 2/4 (Guangzhou), attempt 1
	// 200
	// 200
}

// A streaming DATAFLOW receiver answers {"hasMore": true} while it has work left; ejserver then POSTs the
// item again at once, with "iteration" counting up and webhook-id "{executionId}.{n}".
func ExampleResponse_dataflow() {
	left := map[int]int{0: 25} // records waiting, per item
	h := receiver.Handler(receiver.Options{}, func(ctx context.Context, d receiver.Delivery) (receiver.Response, error) {
		n := min(10, left[d.Payload.ShardingItem])
		left[d.Payload.ShardingItem] -= n
		fmt.Printf("iteration %d (%s): %d records\n", d.Payload.Iteration, d.ID, n)
		return receiver.Response{HasMore: left[d.Payload.ShardingItem] > 0}, nil
	})
	srv := httptest.NewServer(h)
	defer srv.Close()

	for it := 1; ; it++ { // what ejserver does for a streaming job
		id := "e1"
		if it > 1 {
			id += "." + strconv.Itoa(it)
		}
		req, _ := http.NewRequest(http.MethodPost, srv.URL,
			strings.NewReader(`{"executionId":"e1","shardingItem":0,"iteration":`+strconv.Itoa(it)+`}`))
		req.Header.Set("webhook-id", id)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			log.Fatal(err)
		}
		var more receiver.Response
		_ = decodeJSON(resp, &more)
		if !more.HasMore {
			break
		}
	}
	// Output:
	// iteration 1 (e1): 10 records
	// iteration 2 (e1.2): 10 records
	// iteration 3 (e1.3): 5 records
}

// A receiver for long-running items answers 202 Accepted at once and works in the background; the
// Reporter's heartbeats (and automatic ones every leaseSeconds/3) keep the item's lease, and the function's
// result completes it.
func ExampleAsyncHandler() {
	api, callbacks := callbackAPIForExample() // stands in for ejserver: callbackUrl points at it
	defer api.Close()

	h := receiver.AsyncHandler(receiver.Options{ /* Secret: os.Getenv("WEBHOOK_SECRET") */ },
		func(ctx context.Context, d receiver.Delivery, r *receiver.Reporter) error {
			// The long work goes here. ctx ends if ejserver says the item is over (or Shutdown gives up).
			if _, err := r.Heartbeat(ctx, 50, "half way"); err != nil {
				return err
			}
			return nil // completes the item with success; an error would complete it with failure
		})
	srv := httptest.NewServer(h) // in a service: http.ListenAndServe("127.0.0.1:9090", h)
	defer srv.Close()

	body := `{"jobName":"settle","executionId":"e1","shardingItem":2,"attempt":1,"leaseSeconds":60,` +
		`"callbackUrl":"` + api.URL + `/api/v1/executions/e1","callbackToken":"ejcb1.1.example"}`
	req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(body))
	req.Header.Set("webhook-id", "e1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		log.Fatal(err)
	}
	resp.Body.Close()
	fmt.Println(resp.Status)

	// On the way out (after http.Server.Shutdown), wait for the items still running.
	if err := h.Shutdown(context.Background()); err != nil {
		log.Fatal(err)
	}
	for _, c := range callbacks() {
		fmt.Println(c)
	}
	// Output:
	// 202 Accepted
	// heartbeat Bearer ejcb1.1.example {"progress":50,"message":"half way"}
	// complete Bearer ejcb1.1.example {"status":"success","hasMore":false}
}

// A receiver that runs the work its own way (a queue, a worker pool, another process) reports through a
// Callback made from the delivery.
func ExampleNewCallback() {
	api, callbacks := callbackAPIForExample()
	defer api.Close()

	work := make(chan *receiver.Callback, 10)
	var workers sync.WaitGroup
	workers.Go(func() { // the receiver's worker
		for cb := range work {
			if _, err := cb.Heartbeat(context.Background(), 10, "started"); err != nil {
				log.Print(err)
			}
			lease, err := cb.Complete(context.Background(), receiver.Completion{Status: receiver.StatusSuccess, Output: "42 rows"})
			if err != nil { // what remains after retries: 401, 404, 409 (errors.Is(err, receiver.ErrLeaseExpired), ...)
				log.Print(err)
			}
			fmt.Println("ejserver says", lease.State)
		}
	})
	h := receiver.Handler(receiver.Options{}, func(ctx context.Context, d receiver.Delivery) (receiver.Response, error) {
		cb, err := receiver.NewCallback(d.Payload)
		if err != nil {
			return receiver.Response{}, err
		}
		work <- cb
		return receiver.Response{}, nil
	})
	// Handler answers 200; a receiver of its own would answer 202 Accepted here, as AsyncHandler does.
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/", strings.NewReader(
		`{"executionId":"e1","callbackUrl":"`+api.URL+`/api/v1/executions/e1","callbackToken":"ejcb1.1.example"}`)))
	close(work)
	workers.Wait()
	for _, c := range callbacks() {
		fmt.Println(c)
	}
	// Output:
	// ejserver says SUCCEEDED
	// heartbeat Bearer ejcb1.1.example {"progress":10,"message":"started"}
	// complete Bearer ejcb1.1.example {"status":"success","output":"42 rows","hasMore":false}
}

// callbackAPIForExample stands in for ejserver's callback API: it answers RUNNING to heartbeats and
// SUCCEEDED to completions, and records what it got.
func callbackAPIForExample() (*httptest.Server, func() []string) {
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		op := path.Base(r.URL.Path)
		mu.Lock()
		got = append(got, op+" "+r.Header.Get("Authorization")+" "+string(b))
		mu.Unlock()
		state := "RUNNING"
		if op == "complete" {
			state = "SUCCEEDED"
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"executionId":"e1","jobName":"settle","shardingItem":2,"attempt":1,"state":%q}`, state)
	}))
	return srv, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), got...)
	}
}

// signForExample stands in for ejserver: the Standard Webhooks signature of the request.
func signForExample(secret string, h http.Header, body []byte) string {
	key, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(h.Get("webhook-id") + "." + h.Get("webhook-timestamp") + "."))
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

func decodeJSON(resp *http.Response, v any) error {
	defer resp.Body.Close()
	return json.NewDecoder(resp.Body).Decode(v)
}
