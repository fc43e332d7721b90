// Command openapi converts swag's Swagger 2.0 output to OpenAPI 3 and validates specs; scripts/openapi.sh
// runs it (make generate, make test).
//
//	go run ./internal/tools/openapi convert openapi/swagger.json openapi/openapi3.json
//	go run ./internal/tools/openapi validate openapi/openapi3.json
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/ejserver/ejserver/internal/tools/openapi/spec"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "openapi:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) < 2 {
		return fmt.Errorf("usage: openapi convert SWAGGER.json OPENAPI3.json | openapi validate OPENAPI3.json")
	}
	ctx := context.Background()
	switch args[0] {
	case "convert":
		if len(args) != 3 {
			return fmt.Errorf("usage: openapi convert SWAGGER.json OPENAPI3.json")
		}
		in, err := os.ReadFile(args[1])
		if err != nil {
			return err
		}
		doc, err := spec.Convert(ctx, in)
		if err != nil {
			return err
		}
		out, err := json.MarshalIndent(doc, "", "    ")
		if err != nil {
			return err
		}
		return os.WriteFile(args[2], append(out, '\n'), 0o644)
	case "validate":
		for _, f := range args[1:] {
			b, err := os.ReadFile(f)
			if err != nil {
				return err
			}
			if _, err := spec.Load(ctx, b); err != nil {
				return fmt.Errorf("%s: %w", f, err)
			}
		}
		return nil
	}
	return fmt.Errorf("unknown command %q", args[0])
}
