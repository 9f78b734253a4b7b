package api

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"strconv"
	"sync"

	"github.com/danielgtaylor/huma/v2"
	"github.com/gofiber/fiber/v2"

	"github.com/reelforge/reelforge/host/api/apidoc"
)

// publicOperations declares the typed operations served without authentication (operations.go)
// on public: App serves them before the authenticated group, and OpenAPI documents them without
// security.
func (s *Server) publicOperations(public huma.API) {
	s.sessionOperations(public)
	registerRaw(public, op{Method: "GET", Path: "/api/openapi.json", Tag: "Operations", Summary: "This document"},
		map[string]*huma.Response{"200": {Description: "OK", Content: map[string]*huma.MediaType{
			"application/json": {Schema: &huma.Schema{Type: huma.TypeObject, Description: "OpenAPI 3.1"}}}}},
		s.serveOpenAPI)
}

// rootOperations declares the operations served outside /api, before any middleware of its
// groups (operations.go): each answers raw (registerRaw), and says how it is authenticated.
func (s *Server) rootOperations(root huma.API) {
	s.healthOperation(root)
	s.metricsOperation(root)
	s.wsOperation(root)
}

// typedOperations declares every authenticated typed operation (operations.go) on api: App serves
// them, and OpenAPI documents them from the same declarations.
func (s *Server) typedOperations(api huma.API) {
	s.accountOperations(api)
	s.projectOperations(api)
	s.taskOperations(api)
	s.schedulerOperations(api)
	s.apiKeyOperations(api)
	s.notificationOperations(api)
	s.strategyOperations(api)
	s.knowledgeOperations(api)
	s.workflowOperations(api)
	s.namedOperations(api)
	s.batchOperations(api)
	s.contentOperations(api)
}

var openAPIDoc struct {
	once sync.Once
	b    []byte
	err  error
}

// OpenAPI returns the OpenAPI 3.1 document of the API (GET /api/openapi.json): every operation as
// huma documents it from its types, with what the contract says of every operation (apidoc), in
// one document. It panics when a route is documented twice: a programming error every test meets.
func OpenAPI() []byte {
	openAPIDoc.once.Do(func() {
		typed, public, signed := newTypedAPI(nil, ""), newTypedAPI(nil, ""), newTypedAPI(nil, "")
		root, files := newTypedAPI(nil, ""), newTypedAPI(nil, "")
		(&Server{}).typedOperations(typed)
		(&Server{}).publicOperations(public)
		(&Server{}).callbackOperations(signed)
		(&Server{}).rootOperations(root)
		(&Server{}).fileOperations(files)
		openAPIDoc.b, openAPIDoc.err = buildOpenAPI([]securedAPI{{apidoc.Bearer, typed.OpenAPI()},
			{apidoc.Public, public.OpenAPI()}, {apidoc.Callback, signed.OpenAPI()}, {apidoc.Public, root.OpenAPI()},
			{apidoc.File, files.OpenAPI()}})
	})
	if openAPIDoc.err != nil {
		panic(openAPIDoc.err)
	}
	return openAPIDoc.b
}

// securedAPI is the document of a huma API with the security its operations are served with
// (but for a raw operation's own, op.Sec).
type securedAPI struct {
	sec apidoc.Security
	api *huma.OpenAPI
}

// buildOpenAPI adds the typed operations, by the security they are served with (the
// authenticated group's or none), with what the contract says of every operation, to apidoc's
// document.
func buildOpenAPI(typed []securedAPI) ([]byte, error) {
	doc := apidoc.Build()
	paths := doc["paths"].(apidoc.M)
	for _, t := range typed {
		api := t.api
		for path, item := range api.Paths {
			for method, op := range operationsOf(item) {
				sec := t.sec
				if own, _ := op.Metadata[metaSec].(apidoc.Security); own != "" {
					sec = own
				}
				documentOperation(method, path, op, sec)
			}
		}
		raw, err := json.Marshal(api)
		if err != nil {
			return nil, fmt.Errorf("api: openapi: %w", err)
		}
		var part struct {
			Paths      map[string]map[string]any `json:"paths"`
			Components struct {
				Schemas map[string]any `json:"schemas"`
			} `json:"components"`
		}
		if err := json.Unmarshal(raw, &part); err != nil {
			return nil, fmt.Errorf("api: openapi: %w", err)
		}
		for path, item := range part.Paths {
			have, _ := paths[path].(apidoc.M)
			if have == nil {
				have = apidoc.M{}
				paths[path] = have
			}
			for method, op := range item {
				if _, dup := have[method]; dup {
					return nil, fmt.Errorf("api: openapi: %s %s documented twice", method, path)
				}
				have[method] = op
			}
		}
		// The records the operations answer (Project, Task, ...), documented from their Go types.
		maps.Copy(doc["components"].(apidoc.M)["schemas"].(apidoc.M), part.Components.Schemas)
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("api: openapi: %w", err)
	}
	return append(b, '\n'), nil
}

func operationsOf(item *huma.PathItem) map[string]*huma.Operation {
	out := map[string]*huma.Operation{}
	for method, op := range map[string]*huma.Operation{fiber.MethodGet: item.Get, fiber.MethodPost: item.Post,
		fiber.MethodPut: item.Put, fiber.MethodPatch: item.Patch, fiber.MethodDelete: item.Delete} {
		if op != nil {
			out[method] = op
		}
	}
	return out
}

// documentOperation says of a typed operation what the contract says of every operation: its
// id, its security (a bearer token on the authenticated group, none on the public one), the
// Idempotency-Key of an authenticated POST, the standard headers of its success answer and its
// error answers.
func documentOperation(method, path string, op *huma.Operation, sec apidoc.Security) {
	op.OperationID = apidoc.OperationID(method, path)
	switch sec {
	case apidoc.Bearer:
		op.Security = []map[string][]string{{"bearerAuth": {}}}
	case apidoc.Callback:
		op.Security = []map[string][]string{{"callbackSignature": {}}}
	case apidoc.Metrics:
		op.Security = []map[string][]string{{"metricsToken": {}}, {}} // {}: a loopback caller without METRICS_TOKEN
	case apidoc.Socket:
		op.Security = []map[string][]string{{"bearerAuth": {}}, {"tokenQuery": {}}}
	case apidoc.File:
		op.Security = []map[string][]string{{"bearerAuth": {}}, {"signedURL": {}}}
	default:
		op.Security = []map[string][]string{} // public: none, written as []
	}
	if apidoc.TakesIdempotencyKey(method, sec) {
		op.Parameters = append(op.Parameters, &huma.Param{Ref: apidoc.IdempotencyKeyRef})
	}
	if ok := op.Responses[strconv.Itoa(op.DefaultStatus)]; ok != nil && op.DefaultStatus != fiber.StatusSwitchingProtocols {
		ok.Headers = map[string]*huma.Param{}
		for name, h := range apidoc.SuccessHeaders() {
			ok.Headers[name] = &huma.Param{Ref: h.(apidoc.M)["$ref"].(string)}
		}
		also, _ := op.Metadata[metaAlso].([]int)
		for _, st := range also {
			r := *ok
			r.Description = http.StatusText(st)
			op.Responses[strconv.Itoa(st)] = &r
		}
	}
	delete(op.Responses, "default") // huma's, when an operation lists no errors of its own
	extra, _ := op.Metadata[metaErrors].([]int)
	_, raw := op.Metadata[metaRaw].(fiber.Handler)
	for _, st := range apidoc.ErrorStatuses(apidoc.ErrorsOf{Method: method, Path: path, Sec: sec,
		HasBody: op.RequestBody != nil, Extra: extra}) {
		if _, own := op.Responses[strconv.Itoa(st)]; !own || !raw { // a raw operation's own: /health's 503
			op.Responses[strconv.Itoa(st)] = &huma.Response{Ref: apidoc.ErrorResponseRef(st)}
		}
	}
}

// serveOpenAPI answers GET /api/openapi.json (public).
func (s *Server) serveOpenAPI(c *fiber.Ctx) error {
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSONCharsetUTF8)
	c.Set(fiber.HeaderCacheControl, "public, max-age=300")
	return c.Send(OpenAPI())
}
