// Package openapi holds ejserver's API spec, generated from the swag annotations in api/ by
// `make generate` (scripts/openapi.sh): swagger.json and swagger.yaml as swag emits them (Swagger 2.0), and
// openapi3.json, their OpenAPI 3 conversion. ejserver serves them at /openapi/ and a docs page at
// /swagger/index.html. Don't edit the files by hand: `make test` fails when they differ from the annotations.
package openapi

import _ "embed"

// SwaggerJSON is the Swagger 2.0 spec as swag emits it.
//
//go:embed swagger.json
var SwaggerJSON []byte

// SwaggerYAML is the same spec in YAML.
//
//go:embed swagger.yaml
var SwaggerYAML []byte

// OpenAPI3JSON is the spec converted to OpenAPI 3 (kin-openapi), with error responses as
// application/problem+json.
//
//go:embed openapi3.json
var OpenAPI3JSON []byte
