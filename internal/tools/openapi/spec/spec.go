// Package spec turns swag's Swagger 2.0 output into the OpenAPI 3 document ejserver serves, and loads and
// validates the documents ejserver publishes (for the generator, the freshness check and the contract tests).
package spec

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/getkin/kin-openapi/openapi2"
	"github.com/getkin/kin-openapi/openapi2conv"
	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3gen"
	"gopkg.in/yaml.v3"

	"github.com/ejserver/ejserver/receiver"
)

// ProblemJSON is the media type of every error response (RFC 9457).
const ProblemJSON = "application/problem+json"

// ProblemSchema is the schema of those responses' bodies (api.Problem), as a reference in OpenAPI 3.
const ProblemSchema = "#/components/schemas/Problem"

// Convert converts a Swagger 2.0 document to OpenAPI 3 and validates the result. Swagger 2.0 has one
// produces list per operation, so swag's output lists application/json and application/problem+json for
// every response of an operation that can fail; OpenAPI 3 can say which response is which, so the
// conversion gives a response whose body is a Problem application/problem+json only, and every other
// response the operation's other media types. The API-key security scheme swag writes for
// "Authorization: Bearer" becomes an HTTP bearer scheme.
func Convert(ctx context.Context, swagger []byte) (*openapi3.T, error) {
	doc, err := toV3(swagger)
	if err != nil {
		return nil, err
	}
	for _, item := range doc.Paths.Map() {
		for _, op := range item.Operations() {
			for _, resp := range op.Responses.Map() {
				if resp.Value == nil || len(resp.Value.Content) == 0 {
					continue
				}
				var schema *openapi3.SchemaRef // a Swagger 2.0 response has one schema for all its media types
				for _, mt := range resp.Value.Content {
					schema = mt.Schema
				}
				if schema != nil && schema.Ref == ProblemSchema {
					resp.Value.Content = openapi3.Content{ProblemJSON: &openapi3.MediaType{Schema: schema}}
				} else {
					delete(resp.Value.Content, ProblemJSON)
				}
			}
		}
	}
	if err := addWebhook(doc); err != nil {
		return nil, err
	}
	if doc.Components != nil {
		if s, ok := doc.Components.SecuritySchemes["BearerAuth"]; ok && s.Value != nil {
			s.Value = &openapi3.SecurityScheme{Type: "http", Scheme: "bearer", Description: s.Value.Description}
		}
	}
	if err := doc.Validate(ctx); err != nil {
		return nil, fmt.Errorf("the converted OpenAPI 3 document is not valid: %w", err)
	}
	return doc, nil
}

// LoadSwagger reads a Swagger 2.0 document (JSON or YAML) and converts it to OpenAPI 3 as it stands, without
// Convert's corrections, so that an answer can be validated against what the Swagger 2.0 document says (a
// client generated from it expects the media types its produces lists).
func LoadSwagger(ctx context.Context, b []byte) (*openapi3.T, error) {
	if !json.Valid(b) {
		var v any
		if err := yaml.Unmarshal(b, &v); err != nil {
			return nil, fmt.Errorf("read the Swagger 2.0 document: %w", err)
		}
		var err error
		if b, err = json.Marshal(v); err != nil {
			return nil, fmt.Errorf("read the Swagger 2.0 document: %w", err)
		}
	}
	doc, err := toV3(b)
	if err != nil {
		return nil, err
	}
	if err := doc.Validate(ctx); err != nil {
		return nil, fmt.Errorf("the Swagger 2.0 document, converted, is not valid OpenAPI 3: %w", err)
	}
	return doc, nil
}

// toV3 converts a Swagger 2.0 document to OpenAPI 3. An operation without a produces list of its own takes
// the document's, as Swagger 2.0 says (openapi2conv would take application/json).
func toV3(swagger []byte) (*openapi3.T, error) {
	var v2 openapi2.T
	if err := json.Unmarshal(swagger, &v2); err != nil {
		return nil, fmt.Errorf("read the Swagger 2.0 document: %w", err)
	}
	for _, item := range v2.Paths {
		for _, op := range item.Operations() {
			if len(op.Produces) == 0 {
				op.Produces = v2.Produces
			}
		}
	}
	doc, err := openapi2conv.ToV3(&v2)
	if err != nil {
		return nil, fmt.Errorf("convert to OpenAPI 3: %w", err)
	}
	return doc, nil
}

// Load reads an OpenAPI 3 document and validates it.
func Load(ctx context.Context, b []byte) (*openapi3.T, error) {
	doc, err := openapi3.NewLoader().LoadFromData(b)
	if err != nil {
		return nil, err
	}
	if err := doc.Validate(ctx); err != nil {
		return nil, fmt.Errorf("not a valid OpenAPI 3 document: %w", err)
	}
	return doc, nil
}

// WebhookPayload names the schema of the body ejserver POSTs to a job's webhook.
const WebhookPayload = "WebhookPayload"

// addWebhook documents the request ejserver sends to a job's webhook, which Swagger 2.0 can't express: the
// body's schema (receiver.Payload, the contract's one definition, callback fields included) and an OpenAPI 3
// callback on the operations that set a webhook, with the answers ejserver understands.
func addWebhook(doc *openapi3.T) error {
	schema, err := openapi3gen.NewSchemaRefForValue(receiver.Payload{}, nil)
	if err != nil {
		return fmt.Errorf("schema of the webhook body: %w", err)
	}
	schema.Value.Description = "One item of one fire, POSTed to the job's webhook (headers webhook-id, webhook-timestamp, " +
		"webhook-signature, shardingContext, Ejserver-Callback-Url and Ejserver-Callback-Token). callbackUrl and " +
		"callbackToken let a receiver that answers 202 report progress and completion (/api/v1/executions/{id}/heartbeat, /complete)."
	if doc.Components == nil {
		doc.Components = &openapi3.Components{}
	}
	if doc.Components.Schemas == nil {
		doc.Components.Schemas = openapi3.Schemas{}
	}
	doc.Components.Schemas[WebhookPayload] = schema
	answer := func(desc string) *openapi3.Response { return openapi3.NewResponse().WithDescription(desc) }
	ref := func(desc string) *openapi3.ResponseRef { return &openapi3.ResponseRef{Value: answer(desc)} }
	responses := openapi3.NewResponses(
		openapi3.WithStatus(200, ref("success (2xx); a streaming DATAFLOW job's {\"hasMore\": true} asks for the next iteration")),
		openapi3.WithStatus(202, ref("accepted: the item stays RUNNING under its lease until the receiver completes it by callback")),
		openapi3.WithStatus(410, ref("gone: a permanent failure, not retried")),
		openapi3.WithName("default", answer("a failure, retried per the job's retry policy (429 and 503 honour Retry-After)")),
	)
	hook := &openapi3.PathItem{Post: &openapi3.Operation{
		Summary: "An item of a fire, delivered to the job's webhook",
		RequestBody: &openapi3.RequestBodyRef{Value: openapi3.NewRequestBody().WithRequired(true).
			WithJSONSchemaRef(&openapi3.SchemaRef{Ref: "#/components/schemas/" + WebhookPayload})},
		Responses: responses,
	}}
	var cb openapi3.Callback
	cb.Set("{$request.body#/webhook/url}", hook)
	for _, key := range []string{"/api/v1/jobs", "/api/v1/jobs/{jobName}"} {
		item := doc.Paths.Value(key)
		if item == nil {
			return fmt.Errorf("no path %s to hang the webhook on", key)
		}
		for _, op := range []*openapi3.Operation{item.Post, item.Put} {
			if op != nil {
				op.Callbacks = openapi3.Callbacks{"webhook": &openapi3.CallbackRef{Value: &cb}}
			}
		}
	}
	return nil
}
