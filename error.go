package ejserver

import (
	"errors"
	"fmt"
)

// ErrorCode classifies an Error; api/ maps each code to one HTTP status in one place.
type ErrorCode string

// The error codes.
const (
	EINVALID      ErrorCode = "invalid"             // the request is malformed or a field is out of bounds
	ENOTFOUND     ErrorCode = "not_found"           // the named job, execution or item does not exist
	ECONFLICT     ErrorCode = "conflict"            // the thing already exists, or the state forbids the change
	EPRECONDITION ErrorCode = "precondition_failed" // an If-Match version no longer matches
	EUNAVAILABLE  ErrorCode = "unavailable"         // the registry or store cannot be reached now
	EUNAUTHORIZED ErrorCode = "unauthorized"        // a credential (a callback token) is missing or not valid
	EINTERNAL     ErrorCode = "internal"            // a bug or an unexpected failure; details are logged, not returned
)

// FieldError names one offending field (a JSON path such as "webhook.url") and why it is wrong.
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// Error is the error every ejserver layer returns for conditions a user can act on. Message is safe to show
// to a client; Err (the cause) is for logs only.
type Error struct {
	Code    ErrorCode
	Message string
	// Fields lists every offending field of an EINVALID error, the first one first.
	Fields []FieldError
	// Kind, if set, names the problem more precisely than Code (the problem type, e.g. "lease-expired").
	Kind string
	Err  error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %v", e.Message, e.Err)
	}
	return e.Message
}

func (e *Error) Unwrap() error { return e.Err }

// Field is the first offending field, or "".
func (e *Error) Field() string {
	if len(e.Fields) == 0 {
		return ""
	}
	return e.Fields[0].Field
}

// Errorf returns an Error with the given code and a formatted message.
func Errorf(code ErrorCode, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Invalid returns an EINVALID error that points at one field.
func Invalid(field, format string, args ...any) *Error {
	msg := fmt.Sprintf(format, args...)
	return &Error{Code: EINVALID, Message: field + ": " + msg, Fields: []FieldError{{Field: field, Message: msg}}}
}

// Unavailable wraps an infrastructure failure (registry, store) that a retry may cure.
func Unavailable(err error, format string, args ...any) *Error {
	return &Error{Code: EUNAVAILABLE, Message: fmt.Sprintf(format, args...), Err: err}
}

// ErrorCodeOf returns the code of the first *Error in err's chain, EINTERNAL for any other error and "" for nil.
func ErrorCodeOf(err error) ErrorCode {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return EINTERNAL
}

// IsNotFound reports whether err is an ENOTFOUND error.
func IsNotFound(err error) bool { return ErrorCodeOf(err) == ENOTFOUND }
