// Package spec turns swag's Swagger 2.0 output into the OpenAPI 3 document ejserver serves, and loads and
// validates that document (for the generator, the freshness check and the contract tests).
package spec

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/getkin/kin-openapi/openapi2"
	"github.com/getkin/kin-openapi/openapi2conv"
	"github.com/getkin/kin-openapi/openapi3"
)

// ProblemJSON is the media type of every error response (RFC 9457).
const ProblemJSON = "application/problem+json"

// Convert converts a Swagger 2.0 document to OpenAPI 3 and validates the result. Swagger 2.0 has one
// produces list per operation, so swag's output says errors are application/json; the conversion says what
// the server sends: application/problem+json for every 4xx/5xx response. The API-key security scheme
// swag writes for "Authorization: Bearer" becomes an HTTP bearer scheme.
func Convert(ctx context.Context, swagger []byte) (*openapi3.T, error) {
	var v2 openapi2.T
	if err := json.Unmarshal(swagger, &v2); err != nil {
		return nil, fmt.Errorf("read the Swagger 2.0 document: %w", err)
	}
	doc, err := openapi2conv.ToV3(&v2)
	if err != nil {
		return nil, fmt.Errorf("convert to OpenAPI 3: %w", err)
	}
	for _, item := range doc.Paths.Map() {
		for _, op := range item.Operations() {
			for code, resp := range op.Responses.Map() {
				status, err := strconv.Atoi(code)
				if err != nil || status < 400 || resp.Value == nil {
					continue
				}
				var schema *openapi3.SchemaRef
				for _, mt := range resp.Value.Content {
					schema = mt.Schema
				}
				if schema != nil {
					resp.Value.Content = openapi3.Content{ProblemJSON: &openapi3.MediaType{Schema: schema}}
				}
			}
		}
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
