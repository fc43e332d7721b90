package openapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"slices"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/ejserver/ejserver/internal/tools/openapi/spec"
	"github.com/ejserver/ejserver/openapi"
)

// The served OpenAPI 3 document is valid and is the conversion of the served Swagger 2.0 one (freshness
// against the annotations is scripts/openapi.sh check, which needs swag).
func TestSpecIsValidAndConsistent(t *testing.T) {
	ctx := context.Background()
	if _, err := spec.Load(ctx, openapi.OpenAPI3JSON); err != nil {
		t.Fatal(err)
	}
	doc, err := spec.Convert(ctx, openapi.SwaggerJSON)
	if err != nil {
		t.Fatal(err)
	}
	want, err := json.MarshalIndent(doc, "", "    ")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(append(want, '\n'), openapi.OpenAPI3JSON) {
		t.Fatal("openapi3.json is not the conversion of swagger.json: run make generate")
	}
}

// Every published document says what is served: a response whose body is a Problem may be
// application/problem+json in each of them (in Swagger 2.0, its operation produces that), and in the
// OpenAPI 3 document it is that alone while no other response is.
func TestErrorsAreProblemJSONInEveryDocument(t *testing.T) {
	ctx := context.Background()
	v3, err := spec.Load(ctx, openapi.OpenAPI3JSON)
	if err != nil {
		t.Fatal(err)
	}
	fromJSON, err := spec.LoadSwagger(ctx, openapi.SwaggerJSON)
	if err != nil {
		t.Fatal(err)
	}
	fromYAML, err := spec.LoadSwagger(ctx, openapi.SwaggerYAML)
	if err != nil {
		t.Fatal(err)
	}
	docs := []struct {
		name  string
		doc   *openapi3.T
		exact bool // one media type per response
	}{{"openapi3.json", v3, true}, {"swagger.json", fromJSON, false}, {"swagger.yaml", fromYAML, false}}
	problems := map[string]int{}
	for _, d := range docs {
		for path, item := range d.doc.Paths.Map() {
			for method, op := range item.Operations() {
				for code, resp := range op.Responses.Map() {
					var isProblem bool
					for _, mt := range resp.Value.Content {
						isProblem = mt.Schema != nil && mt.Schema.Ref == spec.ProblemSchema
					}
					types := slices.Sorted(maps.Keys(resp.Value.Content))
					switch {
					case isProblem && !slices.Contains(types, spec.ProblemJSON):
						t.Errorf("%s: %s %s -> %s is a Problem served as %v", d.name, method, path, code, types)
					case isProblem && d.exact && len(types) != 1:
						t.Errorf("%s: %s %s -> %s is a Problem served as %v", d.name, method, path, code, types)
					case !isProblem && d.exact && slices.Contains(types, spec.ProblemJSON):
						t.Errorf("%s: %s %s -> %s is not a Problem but served as %v", d.name, method, path, code, types)
					}
					if isProblem {
						problems[d.name]++
					}
				}
			}
		}
	}
	if n := problems["openapi3.json"]; n == 0 || problems["swagger.json"] != n || problems["swagger.yaml"] != n {
		t.Errorf("Problem responses in each document: %v", problems)
	}
}

// swagger.yaml is the same document as swagger.json.
func TestSwaggerYAMLIsSwaggerJSON(t *testing.T) {
	ctx := context.Background()
	var docs [2][]byte
	for i, b := range [][]byte{openapi.SwaggerJSON, openapi.SwaggerYAML} {
		doc, err := spec.LoadSwagger(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		if docs[i], err = json.Marshal(doc); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(docs[0], docs[1]) {
		t.Fatal("swagger.yaml and swagger.json differ: run make generate")
	}
}

// The OpenAPI 3 document describes what ejserver sends to a webhook: the body's schema with the fields a
// receiver that answers 202 reports back with, as a callback of the operations that set a webhook; and the
// callbacks of accepted items are operations of their own.
func TestWebhookAndCallbacksAreDocumented(t *testing.T) {
	doc, err := spec.Load(context.Background(), openapi.OpenAPI3JSON)
	if err != nil {
		t.Fatal(err)
	}
	payload := doc.Components.Schemas[spec.WebhookPayload]
	if payload == nil || payload.Value == nil {
		t.Fatal("no webhook payload schema")
	}
	for _, field := range []string{"executionId", "shardingItem", "attempt", "callbackUrl", "callbackToken", "leaseSeconds"} {
		if payload.Value.Properties[field] == nil {
			t.Errorf("the webhook payload schema has no %s", field)
		}
	}
	for _, op := range []*openapi3.Operation{doc.Paths.Value("/api/v1/jobs").Post, doc.Paths.Value("/api/v1/jobs/{jobName}").Put} {
		cb := op.Callbacks["webhook"]
		if cb == nil || cb.Value.Value("{$request.body#/webhook/url}") == nil || cb.Value.Value("{$request.body#/webhook/url}").Post.Responses.Status(202) == nil {
			t.Errorf("%s: no webhook callback with its 202 answer", op.OperationID)
		}
	}
	for _, kind := range []string{"heartbeat", "complete"} {
		item := doc.Paths.Value("/api/v1/executions/{id}/" + kind)
		if item == nil || item.Post == nil || item.Post.Responses.Status(409) == nil || item.Post.Responses.Status(401) == nil {
			t.Errorf("the %s callback is not documented with its 401 and 409", kind)
		}
	}
}
