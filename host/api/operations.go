package api

// Typed operations: a route declared once, with huma v2 (github.com/danielgtaylor/huma/v2), is
// its Fiber route, the decoding and validation of its path, query and body (from the struct tags
// of its input type: minLength, maxLength, enum, minimum, ...), its success answer (the output
// type, in one of the envelopes of respond.go) and its operation in GET /api/openapi.json. See
// docs/api.md, "How a route is declared".
//
// huma runs inside the Fiber app as one more handler: the middleware of App (request ids, body
// limits, CORS, authentication, rate limits, Idempotency-Key) runs before it as for every route,
// and every error, huma's own (a field that does not validate) or a handler's, goes to Fiber's
// ErrorHandler (handleError), still the only place that writes the failure envelope.
//
// huma ships a Fiber adapter (adapters/humafiber, for gofiber/fiber/v2), but it reads a streamed
// body from the connection, which limitBodies has already read (bounded) into the request, and it
// writes huma's errors itself; fiberAdapter below is the thin adapter huma documents
// (huma.Adapter) with those two things done our way.

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/validation"
	gojson "github.com/goccy/go-json"
	"github.com/gofiber/fiber/v2"

	"github.com/reelforge/reelforge/host/api/apidoc"
	"github.com/reelforge/reelforge/host/auth"
	"github.com/reelforge/reelforge/host/content"
	"github.com/reelforge/reelforge/sdk/errcode"
)

// newTypedAPI is the huma API whose operations are served on r, a group of the paths under
// prefix (nil: documented only, for the OpenAPI document built without a server).
func newTypedAPI(r fiber.Router, prefix string) huma.API {
	cfg := huma.Config{
		OpenAPI: &huma.OpenAPI{
			OpenAPI:    "3.1.0",
			Info:       &huma.Info{Title: "Reelforge API", Version: "v1"},
			Components: &huma.Components{Schemas: huma.NewMapRegistry("#/components/schemas/", schemaName)},
		},
		// JSON both ways, as the hand-written routes: goccy/go-json writes what encoding/json
		// writes (HTML-escaped), as Fiber's encoder does for them.
		Formats: map[string]huma.Format{"application/json": {
			Marshal: func(w io.Writer, v any) error {
				b, err := gojson.Marshal(v)
				if err == nil {
					_, err = w.Write(b)
				}
				return err
			},
			Unmarshal: decodeJSON,
		}},
		DefaultFormat: "application/json",
	}
	// A body may carry fields the operation does not name (a newer client's): they are ignored,
	// as encoding/json ignores them, not refused.
	cfg.AllowAdditionalPropertiesByDefault = true
	cfg.Components.Schemas.RegisterTypeAlias(reflect.TypeFor[json.RawMessage](), reflect.TypeFor[anyJSON]())
	return jsonBodies{huma.NewAPI(cfg, &fiberAdapter{router: r, prefix: prefix})}
}

// schemaName names a type's schema in the document: its Go name (huma's default), but for the
// types whose Go name another package's type has already.
func schemaName(t reflect.Type, hint string) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if name, ok := renamedSchemas[t]; ok {
		return name
	}
	return huma.DefaultSchemaNamer(t, hint)
}

var renamedSchemas = map[reflect.Type]string{
	reflect.TypeFor[content.Report]():   "DiagnosisReport", // scheduler.Report is Report
	reflect.TypeFor[content.Citation](): "ChatCitation",    // the knowledge base's is Citation
}

// jsonBodies reads every request body as JSON whatever its Content-Type says, as decode does for
// the hand-written routes (huma picks the reader by Content-Type, and refuses unknown ones 415).
type jsonBodies struct{ huma.API }

func (jsonBodies) Unmarshal(_ string, data []byte, v any) error { return decodeJSON(data, v) }

// decodeJSON reads one JSON value into v; anything after it is an error. Its errors are the
// public messages of a malformed body (contractError gives them as they are). Numbers are kept
// exact (json.Number) in the fields of an input, not in the untyped value huma validates, whose
// validator knows float64 only.
func decodeJSON(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	if _, untyped := v.(*any); !untyped {
		dec.UseNumber()
	}
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return bodyError(te.Field + ": must be of type " + jsonType(te.Type.Kind().String()))
		}
		return bodyError("Malformed JSON body")
	}
	if rest := bytes.TrimSpace(data[dec.InputOffset():]); len(rest) > 0 {
		return bodyError("Malformed JSON body: data after the JSON value")
	}
	return nil
}

// bodyError is the public message of a body that does not decode.
type bodyError string

func (e bodyError) Error() string { return string(e) }

// op is the documentation of one typed operation beyond what its types say.
type op struct {
	Method, Path string // OpenAPI syntax: /api/projects/{id}
	Tag, Summary string
	Desc         string
	Status       int   // the success status; 0: 200
	Also         []int // further success statuses, with the same body (a DataStatus answer picks one)
	Errors       []int // error statuses beyond those every operation of its kind has (apidoc.ErrorStatuses)
	// Before are Fiber handlers of this route alone that run before its input is read (an admin
	// check, a mark for the Idempotency-Key middleware).
	Before []fiber.Handler
	// Sec is how a raw operation (registerRaw) is authenticated when it is not as the operations
	// of its API are (the root API's /metrics and /ws); "": its API's.
	Sec apidoc.Security
	// Params documents the query parameters a raw operation's handler reads (a typed
	// operation's come from its input type).
	Params []*huma.Param
	// Answer documents the success answer when the output type cannot: a streamed file's bytes.
	Answer *huma.Response
	// Form documents a multipart/form-data body its handler reads itself (an input whose RawBody
	// is a multipart.Form, which huma documents as any form).
	Form *huma.Schema
	// JSON documents, as the schema of this type, a JSON body its handler decodes itself
	// (requestBody, then validBody): huma neither decodes nor validates it. Only where decoding
	// the body costs (batch/text: kbBatchText says why); any other input has a Body.
	JSON reflect.Type
}

// register declares one operation whose handler takes its validated input and returns its answer.
// The handler's errors are answered by handleError, like a hand-written route's.
func register[I, O any](api huma.API, o op, handler func(context.Context, *I) (*O, error)) {
	hop := o.operation()
	// Documented by documentOperations (openapi.go); huma's own error responses (RFC 9457
	// problem+json) are not the contract's.
	hop.Responses = map[string]*huma.Response{}
	hop.Metadata[metaAlso] = o.Also
	if o.Answer != nil {
		hop.Responses[strconv.Itoa(hop.DefaultStatus)] = o.Answer
	}
	if o.Form != nil {
		hop.RequestBody = &huma.RequestBody{Required: true,
			Content: map[string]*huma.MediaType{"multipart/form-data": {Schema: o.Form}}}
	}
	if o.JSON != nil {
		reg := api.OpenAPI().Components.Schemas
		hop.RequestBody = &huma.RequestBody{Required: true,
			Content: map[string]*huma.MediaType{"application/json": {Schema: reg.Schema(o.JSON, true, "")}}}
		hop.SkipValidateBody = true
		hop.Metadata[metaRegistry] = reg // for validBody
	}
	huma.Register(api, *hop, func(ctx context.Context, in *I) (*O, error) {
		out, err := handler(ctx, in)
		if err != nil {
			return nil, answered(ctx, err)
		}
		return out, nil
	})
}

// registerRaw declares an operation whose Fiber handler writes its answer itself: a text body, a
// status it chooses with a body of its own, a WebSocket upgrade. huma documents it from o and
// responses (its success answer and any status answered with a body other than the error
// envelope); the adapter serves h as it is, after o.Before.
func registerRaw(api huma.API, o op, responses map[string]*huma.Response, h fiber.Handler) {
	hop := o.operation()
	hop.Parameters, hop.Responses = o.Params, responses
	hop.Metadata[metaRaw], hop.Metadata[metaSec] = h, o.Sec
	api.OpenAPI().AddOperation(hop)
	api.Adapter().Handle(hop, nil)
}

// operation is the huma operation o declares, as register and registerRaw both begin it.
func (o op) operation() *huma.Operation {
	hop := &huma.Operation{
		Method:        o.Method,
		Path:          o.Path,
		Tags:          []string{o.Tag},
		Summary:       o.Summary,
		Description:   o.Desc,
		DefaultStatus: o.Status,
		Metadata:      map[string]any{metaErrors: o.Errors, metaBefore: o.Before},
		// No limit of huma's (1 MiB by default, a 413 past it): limitBodies has bounded the body
		// by BODY_LIMIT_BYTES (the uploads' by UPLOAD_LIMIT_BYTES) before huma reads it, and that
		// setting is the one limit.
		MaxBodyBytes: -1,
	}
	if hop.DefaultStatus == 0 {
		hop.DefaultStatus = http.StatusOK
	}
	return hop
}

const (
	metaErrors = "reelforge-errors"
	metaBefore = "reelforge-before"
	metaAlso   = "reelforge-also"
	metaRaw    = "reelforge-raw"
	metaSec    = "reelforge-security"
	// metaRegistry is the schema registry of an operation with an op.JSON body: validBody
	// resolves the body schema's references in it.
	metaRegistry = "reelforge-registry"
)

// ---------------------------------------------------------------------------------------------
// Errors: huma's become the contract's.

func init() {
	// huma's request errors (a path, query or body that does not validate, an unreadable body)
	// are kept on the request for handleError to answer (contractError); what huma then writes
	// of them is discarded by fiberContext.
	huma.NewError = func(status int, msg string, errs ...error) huma.StatusError {
		err := contractError(status, msg, errs)
		return &answeredError{status: err.HTTPStatus(), err: err}
	}
	huma.NewErrorWithContext = func(hc huma.Context, status int, msg string, errs ...error) huma.StatusError {
		err := huma.NewError(status, msg, errs...)
		if fc := unwrapContext(hc); fc != nil && fc.err == nil {
			fc.err = errors.Unwrap(err)
		}
		return err
	}
	// The problems of a field, in the words of the hand-written validation: the answer is
	// "name: must be at most 200 characters" either way.
	validation.MsgExpectedRequiredProperty = "%s" + requiredSuffix
	validation.MsgExpectedMinLength = "must be at least %d characters"
	validation.MsgExpectedMaxLength = "must be at most %d characters"
	validation.MsgExpectedOneOf = "must be one of %s"
	validation.MsgExpectedBePattern = "must be %s" // with the tag patternDescription
	validation.MsgExpectedMatchPattern = "must match %s"
	validation.MsgExpectedMinimumNumber = "must be at least %v"
	validation.MsgExpectedMaximumNumber = "must be at most %v"
	validation.MsgExpectedString = "must be of type string"
	validation.MsgExpectedNumber = "must be of type number"
	validation.MsgExpectedInteger = "must be of type integer"
	validation.MsgExpectedBoolean = "must be of type boolean"
	validation.MsgExpectedArray = "must be of type array"
	validation.MsgExpectedMinItems = "must hold at least %d items"
	validation.MsgExpectedMaxItems = "must hold at most %d items"
	validation.MsgExpectedObject = "must be of type object"
	validation.MsgExpectedRFC4122UUID = "must be a UUID (%v)"
	validation.MsgExpectedRFC5322Email = "must be a valid email address (%v)"
	validation.MsgExpectedMatchExactlyOneSchema = "must be one of the forms the document gives"
}

const requiredSuffix = " is required"

// contractError is the catalogued error of a request huma refused: 400 VALIDATION_ERROR naming
// the fields (huma says 422), 413 for a body over its limit, 408 for one that did not arrive.
func contractError(status int, msg string, errs []error) *errcode.Error {
	switch status {
	case http.StatusRequestEntityTooLarge:
		return tooLarge()
	case http.StatusRequestTimeout:
		return errcode.New(errcode.Validation, "The request body could not be read").WithStatus(http.StatusRequestTimeout)
	case http.StatusBadRequest, http.StatusUnprocessableEntity, http.StatusUnsupportedMediaType:
	default:
		if len(errs) == 1 && errs[0] != nil {
			return toCoded(errs[0])
		}
		return toCoded(fiber.NewError(status, msg))
	}
	var fields []errcode.FieldError
	for _, e := range errs {
		var d *huma.ErrorDetail
		if !errors.As(e, &d) {
			continue
		}
		field, problem := fieldProblem(d.Location, d.Message)
		if field == "" {
			// The body as a whole: malformed JSON, said as decodeJSON says it.
			return errcode.New(errcode.Validation, problem)
		}
		if fe := (errcode.FieldError{Field: field, Problem: problem}); !slices.Contains(fields, fe) {
			fields = append(fields, fe) // a form value that is no number is said twice (parsed, validated)
		}
	}
	if len(fields) == 0 {
		return errcode.New(errcode.Validation, "Bad request: "+msg)
	}
	return errcode.New(errcode.Validation, fields[0].Field+": "+fields[0].Problem).WithDetails(fields)
}

// fieldProblem names the field of one of huma's errors (location body.name, query.limit,
// path.id; a missing property is reported on its object) and says its problem.
func fieldProblem(location, message string) (field, problem string) {
	field = location
	for _, in := range []string{"body", "query", "path", "header", "form"} {
		if field == in {
			field = ""
			break
		}
		if rest, ok := strings.CutPrefix(field, in+"."); ok {
			field = rest
			break
		}
	}
	if name, ok := strings.CutSuffix(message, requiredSuffix); ok && !strings.Contains(name, " ") {
		if field != "" {
			name = field + "." + name
		}
		return name, "is required"
	}
	if field == "" {
		if f, p, ok := strings.Cut(message, ": must be of type "); ok && location == "body" {
			return f, "must be of type " + p // a field decodeJSON could not read
		}
		return "", message
	}
	if message == fmt.Sprintf(validation.MsgExpectedMinLength, 1) {
		// An empty text where one is needed: said as the hand validation said it.
		return field, "is required"
	}
	if message == "File required" { // a multipart form without its file
		return field, "is required"
	}
	if message == "invalid integer" || message == "invalid float" { // a query or form value that is no number
		return field, "must be of type " + strings.TrimPrefix(message, "invalid ")
	}
	return field, message
}

// answeredError is what huma is handed for an error that handleError answers: huma writes it to
// a context that discards it.
type answeredError struct {
	status int
	err    error
}

func (e *answeredError) Error() string  { return e.err.Error() }
func (e *answeredError) Unwrap() error  { return e.err }
func (e *answeredError) GetStatus() int { return e.status }

// Schema: never documented by huma (every operation's error responses are the contract's).
func (e *answeredError) Schema(huma.Registry) *huma.Schema {
	return &huma.Schema{Ref: "#/components/schemas/ErrorEnvelope"}
}

// answered keeps a handler's error on its request for handleError.
func answered(ctx context.Context, err error) error {
	if fc, _ := ctx.Value(fiberContextKey{}).(*fiberContext); fc != nil && fc.err == nil {
		fc.err = err
	}
	return &answeredError{status: toCoded(err).HTTPStatus(), err: err}
}

// ---------------------------------------------------------------------------------------------
// The adapter.

// fiberAdapter serves operations on a Fiber group: an operation's path (/api/projects/{id}) is the
// group's prefix (/api) and a route of the group (/projects/:id).
type fiberAdapter struct {
	router fiber.Router
	prefix string
}

func (a *fiberAdapter) Handle(op *huma.Operation, handler func(huma.Context)) {
	if a.router == nil {
		return
	}
	path, ok := strings.CutPrefix(strings.NewReplacer("{", ":", "}", "").Replace(op.Path), a.prefix)
	if !ok {
		panic(fmt.Sprintf("api: operation %s %s is not under %s", op.Method, op.Path, a.prefix))
	}
	before, _ := op.Metadata[metaBefore].([]fiber.Handler)
	if raw, ok := op.Metadata[metaRaw].(fiber.Handler); ok {
		a.router.Add(op.Method, path, append(before, raw)...)
		return
	}
	handlers := append(before, func(c *fiber.Ctx) error {
		fc := &fiberContext{op: op, c: c, status: http.StatusOK}
		fc.ctx = context.WithValue(c.UserContext(), fiberContextKey{}, fc)
		handler(fc)
		return fc.err
	})
	a.router.Add(op.Method, path, handlers...)
	if op.Method == http.MethodGet {
		// As Fiber's Get registers it: a HEAD is answered as the GET, without its body (fasthttp
		// sends none), so a HEAD of a file tells its length.
		a.router.Add(http.MethodHead, path, handlers...)
	}
}

// ServeHTTP is huma's test hook (humatest); the host's tests go through Fiber's app.Test.
func (a *fiberAdapter) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	http.Error(w, "not served through huma", http.StatusNotImplemented)
}

type fiberContextKey struct{}

// fiberContext is one request as huma sees it. Once the request has an error (err), what huma
// writes is discarded: handleError writes the answer.
type fiberContext struct {
	op     *huma.Operation
	c      *fiber.Ctx
	ctx    context.Context
	status int
	err    error
}

var _ huma.Context = (*fiberContext)(nil)

// unwrapContext finds the fiberContext under huma's wrappers (huma.WithContext, WithValue).
func unwrapContext(hc huma.Context) *fiberContext {
	for hc != nil {
		if fc, ok := hc.(*fiberContext); ok {
			return fc
		}
		u, ok := hc.(interface{ Unwrap() huma.Context })
		if !ok {
			return nil
		}
		hc = u.Unwrap()
	}
	return nil
}

func (fc *fiberContext) Operation() *huma.Operation { return fc.op }
func (fc *fiberContext) Context() context.Context   { return fc.ctx }
func (fc *fiberContext) TLS() *tls.ConnectionState  { return fc.c.Context().TLSConnectionState() }
func (fc *fiberContext) Version() huma.ProtoVersion { return huma.ProtoVersion{Proto: fc.c.Protocol()} }
func (fc *fiberContext) Method() string             { return fc.c.Method() }
func (fc *fiberContext) Host() string               { return fc.c.Hostname() }
func (fc *fiberContext) RemoteAddr() string         { return fc.c.Context().RemoteAddr().String() }
func (fc *fiberContext) Param(name string) string   { return fc.c.Params(name) }
func (fc *fiberContext) Query(name string) string   { return fc.c.Query(name) }
func (fc *fiberContext) Header(name string) string  { return fc.c.Get(name) }
func (fc *fiberContext) Status() int                { return fc.status }

func (fc *fiberContext) URL() url.URL {
	u, err := url.ParseRequestURI(string(fc.c.Request().RequestURI()))
	if err != nil {
		return url.URL{Path: fc.c.Path()}
	}
	return *u
}

func (fc *fiberContext) EachHeader(cb func(name, value string)) {
	for k, v := range fc.c.Request().Header.All() {
		cb(string(k), string(v))
	}
}

// BodyReader is the body limitBodies read, bounded, before any handler ran.
func (fc *fiberContext) BodyReader() io.Reader { return bytes.NewReader(fc.c.Body()) }

// GetMultipartForm is the form uploadForm read. A body that is not an upload's form (JSON, or no
// body) reads as an empty form: the handler then names the file field it lacks, as it always did.
func (fc *fiberContext) GetMultipartForm() (*multipart.Form, error) {
	if !uploading(fc.c) {
		return &multipart.Form{Value: map[string][]string{}, File: map[string][]*multipart.FileHeader{}}, nil
	}
	return fc.c.MultipartForm()
}

// SetReadDeadline: the server's read timeouts bound the body (bodies.go); limitBodies has read it.
func (fc *fiberContext) SetReadDeadline(time.Time) error { return nil }

func (fc *fiberContext) SetStatus(code int) {
	if fc.err == nil {
		fc.status = code
		fc.c.Status(code)
	}
}

func (fc *fiberContext) SetHeader(name, value string) {
	if fc.err == nil {
		fc.c.Set(name, value)
	}
}

func (fc *fiberContext) AppendHeader(name, value string) {
	if fc.err == nil {
		fc.c.Append(name, value)
	}
}

func (fc *fiberContext) BodyWriter() io.Writer {
	if fc.err != nil {
		return io.Discard
	}
	return fc.c.Context()
}

// anyJSON documents a json.RawMessage (huma would say {}, which a validator reads as "not null"):
// any JSON value, null included.
type anyJSON struct{}

func (anyJSON) Schema(huma.Registry) *huma.Schema {
	return &huma.Schema{Description: "any JSON value", AnyOf: []*huma.Schema{{}, {Type: "null"}}}
}

// jsonObject is a JSON object (or null) an input keeps as it was sent: a blueprint is stored as
// given.
type jsonObject json.RawMessage

func (o *jsonObject) UnmarshalJSON(b []byte) error {
	*o = append((*o)[:0], b...)
	return nil
}

func (o jsonObject) MarshalJSON() ([]byte, error) {
	if len(o) == 0 {
		return []byte("null"), nil
	}
	return o, nil
}

// Schema: an object of any properties, or null.
func (jsonObject) Schema(huma.Registry) *huma.Schema {
	return &huma.Schema{Type: huma.TypeObject, Nullable: true, AdditionalProperties: true}
}

// value is the object, nil when it was not given or given as null.
func (o jsonObject) value() json.RawMessage {
	if len(o) == 0 || string(o) == "null" {
		return nil
	}
	return json.RawMessage(o)
}

// ---------------------------------------------------------------------------------------------
// What typed handlers read of their request beyond their input.

// requestBody is the bytes of a typed handler's request body, as they came (a signed callback's).
func requestBody(ctx context.Context) []byte {
	if fc, _ := ctx.Value(fiberContextKey{}).(*fiberContext); fc != nil {
		return fc.c.Body()
	}
	return nil
}

// validBody checks body, the JSON value of the request body of an operation declared with op.JSON
// (or a stand-in of the same shape), against the body's schema, as huma checks every other body:
// a body that does not validate is the same error as on any route (contractError).
func validBody(ctx context.Context, body any) error {
	fc, _ := ctx.Value(fiberContextKey{}).(*fiberContext)
	reg, _ := fc.op.Metadata[metaRegistry].(huma.Registry)
	if reg == nil {
		panic("api: validBody on an operation declared without op.JSON")
	}
	pb := huma.NewPathBuffer(make([]byte, 0, 64), 0)
	pb.Push("body")
	res := &huma.ValidateResult{}
	huma.Validate(reg, fc.op.RequestBody.Content["application/json"].Schema, pb, huma.ModeWriteToServer, body, res)
	if len(res.Errors) > 0 {
		return contractError(http.StatusUnprocessableEntity, "validation failed", res.Errors)
	}
	return nil
}

// malformedBody is the error of a request body that is not JSON, as huma's for any other body.
func malformedBody(err error) error {
	return contractError(http.StatusBadRequest, "", []error{&huma.ErrorDetail{Location: "body", Message: err.Error()}})
}

// fiberCtx is the Fiber request of a typed handler (a file route's path, which holds its key).
func fiberCtx(ctx context.Context) *fiber.Ctx {
	if fc, _ := ctx.Value(fiberContextKey{}).(*fiberContext); fc != nil {
		return fc.c
	}
	return nil
}

// caller is the authenticated principal of a typed handler's request (nil on a public route).
func caller(ctx context.Context) *auth.Principal {
	if fc, _ := ctx.Value(fiberContextKey{}).(*fiberContext); fc != nil {
		return principal(fc.c)
	}
	return nil
}
