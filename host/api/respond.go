package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/danielgtaylor/huma/v2"
	gojson "github.com/goccy/go-json"

	"github.com/reelforge/reelforge/sdk/errcode"
)

// The success envelopes of shared/spec/DECISIONS.md, for typed operations (operations.go): an
// operation's output type is one of Data, Top and List of its fields' type, which says both
// what it writes and what the OpenAPI document says of it.

// Data is the answer {success: true, data: {...}} with data's keys repeated at the top level
// (the named shapes {project}, {project, tasks}, ...). T is a struct whose JSON is an object.
type Data[T any] struct{ Body dataBody[T] }

// DataStatus is a Data answer whose status the handler picks: its operation's (op.Status) or one
// of the further ones it documents (op.Also), as an ingest answers 201 with a new document and
// 200 with one its source held already.
type DataStatus[T any] struct {
	Status int
	Body   dataBody[T]
}

// Top is the answer {success: true, ...T's fields} (the workflow routes).
type Top[T any] struct{ Body topBody[T] }

// List is the answer {success: true, data: [items], total, page, limit}.
type List[T any] struct{ Body listBody[T] }

// answerData, answerDataStatus, answerTop and answerList build the answers of typed handlers.
func answerData[T any](v T) (*Data[T], error) { return &Data[T]{Body: dataBody[T]{v}}, nil }

func answerTop[T any](v T) (*Top[T], error) { return &Top[T]{Body: topBody[T]{v}}, nil }

func answerDataStatus[T any](status int, v T) (*DataStatus[T], error) {
	return &DataStatus[T]{Status: status, Body: dataBody[T]{v}}, nil
}

func answerList[T any](items []T, total int, pq Paging) (*List[T], error) {
	if items == nil {
		items = []T{} // an empty page is [], not null
	}
	return &List[T]{Body: listBody[T]{Data: items, Limit: pq.Limit, Page: pq.Page, Success: true, Total: total}}, nil
}

type dataBody[T any] struct{ v T }

type topBody[T any] struct{ v T }

// listBody's fields are in the order of their names: it writes the bytes a map of them would.
type listBody[T any] struct {
	Data    []T  `json:"data"`
	Limit   int  `json:"limit"`
	Page    int  `json:"page"`
	Success bool `json:"success" enum:"true"`
	Total   int  `json:"total" doc:"matching records"`
}

// MarshalJSON writes {"success":true,"data":{...},...data's members}: the object is marshalled
// once and its members written twice.
func (b dataBody[T]) MarshalJSON() ([]byte, error) {
	obj, err := objectJSON(b.v)
	if err != nil {
		return nil, err
	}
	out := append([]byte(`{"success":true,"data":`), obj...)
	if members := obj[1 : len(obj)-1]; len(bytes.TrimSpace(members)) > 0 {
		out = append(append(out, ','), members...)
	}
	return append(out, '}'), nil
}

// MarshalJSON writes {"success":true,...v's members}.
func (b topBody[T]) MarshalJSON() ([]byte, error) {
	obj, err := objectJSON(b.v)
	if err != nil {
		return nil, err
	}
	out := []byte(`{"success":true`)
	if members := obj[1 : len(obj)-1]; len(bytes.TrimSpace(members)) > 0 {
		out = append(append(out, ','), members...)
	}
	return append(out, '}'), nil
}

func objectJSON(v any) ([]byte, error) {
	obj, err := gojson.Marshal(v)
	if err != nil {
		return nil, err
	}
	if len(obj) < 2 || obj[0] != '{' {
		return nil, fmt.Errorf("api: an answer's fields must be a JSON object, got %.20s", obj)
	}
	return obj, nil
}

// Schema documents Data: success, data (T's schema) and T's properties at the top level.
func (dataBody[T]) Schema(r huma.Registry) *huma.Schema {
	fields := nullStructs[T](huma.SchemaFromType(r, reflect.TypeFor[T]()))
	s := envelopeSchema(fields, "success", "data")
	s.Properties["data"] = fields
	s.Description = "`{success: true, data: {...}}`; the keys of data are repeated at the top level"
	return s
}

// Schema documents Top: success and T's properties.
func (topBody[T]) Schema(r huma.Registry) *huma.Schema {
	return envelopeSchema(nullStructs[T](huma.SchemaFromType(r, reflect.TypeFor[T]())), "success")
}

// nullStructs says of T's fields that point to a struct (the scheduler's last_tick) that they are
// null when nil: huma documents them as the struct alone (it leaves nullable objects out).
func nullStructs[T any](s *huma.Schema) *huma.Schema {
	t := reflect.TypeFor[T]()
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Type.Kind() != reflect.Pointer || f.Type.Elem().Kind() != reflect.Struct || f.Type.Elem() == reflect.TypeFor[time.Time]() {
			continue
		}
		if p := s.Properties[name]; p != nil {
			s.Properties[name] = &huma.Schema{AnyOf: []*huma.Schema{p, {Type: "null"}}}
		}
	}
	return s
}

// envelopeSchema is an object of fields' properties plus success (true), requiring required and
// fields' required properties.
func envelopeSchema(fields *huma.Schema, required ...string) *huma.Schema {
	s := &huma.Schema{Type: huma.TypeObject, Properties: map[string]*huma.Schema{
		"success": {Type: huma.TypeBoolean, Enum: []any{true}},
	}}
	for k, v := range fields.Properties {
		s.Properties[k] = v
	}
	s.Required = append(required, fields.Required...)
	return s
}

// Paging is the page and limit of a listing's query; an input type embeds it (exported: huma
// reads the fields of exported embedded structs only). Page's maximum bounds its offset (at most
// 100,000,000 rows) within every driver's integers: SQLite wrapped 2^63-1 round to the first
// page, PostgreSQL answered 500.
type Paging struct {
	Page  int `query:"page" minimum:"1" maximum:"1000000" default:"1"`
	Limit int `query:"limit" minimum:"1" maximum:"100" default:"20"`
}

// offset is the number of records before the page.
func (pq Paging) offset() int { return (pq.Page - 1) * pq.Limit }

// decodeError is the 400 of a JSON value that did not decode (err from encoding/json): a field of
// the wrong type names the field; anything else gives malformed, the message for that value.
func decodeError(err error, malformed string) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return errcode.Invalid(te.Field, "must be of type "+jsonType(te.Type.Kind().String()))
	}
	return errcode.New(errcode.Validation, malformed)
}

func jsonType(kind string) string {
	switch kind {
	case "string":
		return "string"
	case "map", "struct":
		return "object"
	case "slice", "array":
		return "array"
	case "bool":
		return "boolean"
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
		return "integer" // 2.5 or 1e100 for a whole-number field
	}
	return "number"
}

// fieldLen checks a text field's length in characters: required fields must be non-empty.
func fieldLen(field, value string, required bool, max int) error {
	n := utf8.RuneCountInString(value)
	if required && n == 0 {
		return errcode.Invalid(field, "is required")
	}
	if n > max {
		return errcode.Invalid(field, fmt.Sprintf("must be at most %d characters", max))
	}
	return nil
}
