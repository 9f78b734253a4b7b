package errcode

import (
	"errors"
	"fmt"
)

// Error is a failure with a catalogue code. Msg is safe to show to clients; Err is the internal
// cause and never leaves the process.
type Error struct {
	Op      string // where it happened, e.g. "auth.login"; for logs
	Code    Code
	Msg     string // public message; empty means the catalogue default
	Err     error  // internal cause; never sent to clients
	Details any    // optional public details, e.g. []FieldError
	Status  int    // optional HTTP status overriding the catalogue's (413 for VALIDATION_ERROR)
	// RetryAfter, in seconds, for RATE_LIMIT_EXCEEDED and QUOTA_EXCEEDED answers; 0 means none.
	RetryAfter int
}

// FieldError names one invalid request field.
type FieldError struct {
	Field   string `json:"field"`
	Problem string `json:"problem"`
}

// E builds an *Error. msg may be empty (the catalogue message is used); err may be nil.
func E(op string, code Code, msg string, err error) *Error {
	return &Error{Op: op, Code: code, Msg: msg, Err: err}
}

// New builds an *Error with only a code and a public message.
func New(code Code, msg string) *Error { return &Error{Code: code, Msg: msg} }

// Newf is New with a formatted message.
func Newf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Msg: fmt.Sprintf(format, args...)}
}

// Invalid is a VALIDATION_ERROR naming one field.
func Invalid(field, problem string) *Error {
	return &Error{Code: Validation, Msg: field + ": " + problem,
		Details: []FieldError{{Field: field, Problem: problem}}}
}

func (e *Error) Error() string {
	msg := e.Message()
	s := string(e.Code) + ": " + msg
	if e.Op != "" {
		s = e.Op + ": " + s
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// Message returns the public message: Msg, or the catalogue default.
func (e *Error) Message() string {
	if e.Msg != "" {
		return e.Msg
	}
	return Lookup(e.Code).Message
}

// HTTPStatus returns Status when set, else the catalogue status of Code.
func (e *Error) HTTPStatus() int {
	if e.Status != 0 {
		return e.Status
	}
	return e.Code.HTTPStatus()
}

// WithStatus returns e with an explicit HTTP status (for example 413 for an over-large body).
func (e *Error) WithStatus(status int) *Error { e.Status = status; return e }

// WithDetails returns e carrying public details.
func (e *Error) WithDetails(d any) *Error { e.Details = d; return e }

// Of returns the code of the first *Error in err's chain; nil is "" and an error without a code
// is Unknown.
func Of(err error) Code {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return Unknown
}

// As returns the first *Error in err's chain, or nil.
func As(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return nil
}

// Is reports whether err carries code c.
func Is(err error, c Code) bool { return err != nil && Of(err) == c }
