package openapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

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
