package ejserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// DecodeJobConfig decodes a job from JSON strictly (unknown fields and trailing data are errors) on top of
// ElasticJob's defaults. The error is an EINVALID *Error naming the offending field where JSON tells it.
func DecodeJobConfig(r io.Reader) (JobConfig, error) {
	cfg := DefaultJobConfig()
	var body bytes.Buffer
	dec := json.NewDecoder(io.TeeReader(r, &body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cfg); err != nil {
		return JobConfig{}, jsonError(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return JobConfig{}, Invalid("body", "unexpected data after the JSON object")
	}
	cfg.misfireSet = misfirePresent(body.Bytes())
	return cfg, nil
}

// decodeStrict decodes one JSON value, rejecting unknown fields.
func decodeStrict(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// jsonError turns encoding/json's errors into field-level EINVALID errors.
func jsonError(err error) *Error {
	var own *Error
	if errors.As(err, &own) {
		return own // from a nested UnmarshalJSON, already naming its field
	}
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &typeErr):
		field := typeErr.Field
		if field == "" {
			field = "body"
		}
		return Invalid(field, "must be %s, not %s", jsonTypeName(typeErr.Type.Kind().String()), typeErr.Value)
	case errors.As(err, &syntaxErr):
		return Invalid("body", "malformed JSON at byte %d: %v", syntaxErr.Offset, err)
	case errors.Is(err, io.EOF):
		return Invalid("body", "a JSON object is required")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return Invalid("body", "truncated JSON")
	}
	// encoding/json reports unknown fields as `json: unknown field "x"`.
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		field := strings.Trim(name, `"`)
		if field == "" {
			return Invalid("body", `unknown field "" (an empty field name)`)
		}
		return Invalid(field, "unknown field (check its spelling; field names are case-sensitive)")
	}
	return Invalid("body", "%v", err)
}

// nestedError turns a decoding error inside the object at field into an *Error whose fields are prefixed.
func nestedError(field string, err error) *Error {
	e := jsonError(err)
	out := &Error{Code: e.Code, Err: e.Err}
	for _, f := range e.Fields {
		name := field
		if f.Field != "body" {
			name = field + "." + f.Field
		}
		out.Fields = append(out.Fields, FieldError{Field: name, Message: f.Message})
	}
	if len(out.Fields) > 0 {
		out.Message = out.Fields[0].Field + ": " + out.Fields[0].Message
	}
	return out
}

func jsonTypeName(kind string) string {
	switch kind {
	case "int", "int64", "int32", "float64":
		return "a number"
	case "string":
		return "a string"
	case "bool":
		return "true or false"
	case "map", "struct":
		return "an object"
	case "slice":
		return "an array"
	}
	return fmt.Sprintf("a %s", kind)
}

func jsonMarshal(v any) ([]byte, error) { return json.Marshal(v) }
