package api_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/reelforge/reelforge/host/api"
)

// The contract test: every exchange the API tests make through testBundle.do is checked against
// the served OpenAPI document (/api/openapi.json) with kin-openapi's openapi3filter. A response
// must match its operation's documented status and body; a request the document refuses must be
// refused (4xx), never served.
var contract struct {
	once   sync.Once
	router routers.Router
	err    error
}

func contractRouter(t *testing.T) routers.Router {
	t.Helper()
	contract.once.Do(func() {
		loader := openapi3.NewLoader()
		doc, err := loader.LoadFromData(api.OpenAPI())
		if err != nil {
			contract.err = fmt.Errorf("load openapi.json: %w", err)
			return
		}
		doc.Servers = nil // match requests to any host
		contract.router, contract.err = gorillamux.NewRouter(doc)
	})
	if contract.err != nil {
		t.Fatalf("contract: %v", contract.err)
	}
	return contract.router
}

// checkContract validates one exchange; the failures name the operation and what disagrees.
func checkContract(t *testing.T, req *http.Request, reqBody []byte, status int, header http.Header, body []byte) {
	t.Helper()
	// Issue 37: a browser must never sniff an answer into a type it would run.
	if strings.Contains(header.Get("Content-Type"), "json") && header.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("%s %s -> %d: JSON answer without X-Content-Type-Options: nosniff", req.Method, req.URL.Path, status)
	}
	r := req.Clone(context.Background())
	r.Body = io.NopCloser(bytes.NewReader(reqBody))
	if r.URL.Host == "" {
		r.URL.Host = r.Host
	}
	route, params, err := contractRouter(t).FindRoute(r)
	if err != nil {
		return // no operation: an unknown route, which the tests expect to be 404
	}
	in := &openapi3filter.RequestValidationInput{Request: r, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, MultiError: true}}
	if err := openapi3filter.ValidateRequest(context.Background(), in); err != nil && status < 400 {
		t.Errorf("contract: %s %s: the document refuses the request but the API answered %d:\n%v", req.Method, req.URL.Path, status, brief(err))
	}
	r.Body = io.NopCloser(bytes.NewReader(reqBody))
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: status, Header: header,
		Body: io.NopCloser(bytes.NewReader(body)), Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true}}
	if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
		t.Errorf("contract: %s %s -> %d: the response disagrees with the document:\n%v\nbody: %.300s", req.Method, route.Path, status, brief(err), body)
	}
}

func brief(err error) string {
	var me openapi3.MultiError
	if errors.As(err, &me) {
		var b strings.Builder
		for i, e := range me {
			if i == 5 {
				fmt.Fprintf(&b, "  ... and %d more\n", len(me)-5)
				break
			}
			fmt.Fprintf(&b, "  - %.400s\n", e.Error())
		}
		return b.String()
	}
	return fmt.Sprintf("  %.600s", err.Error())
}

// testApp sends req to app like app.Test(req, -1) and checks the exchange against the contract;
// the response's body can still be read.
func testApp(t *testing.T, app interface {
	Test(*http.Request, ...int) (*http.Response, error)
}, req *http.Request) (*http.Response, error) {
	t.Helper()
	var reqBody []byte
	if req.Body != nil {
		reqBody, _ = io.ReadAll(req.Body)
		req.Body = io.NopCloser(bytes.NewReader(reqBody))
	}
	res, err := app.Test(req, -1)
	if err != nil {
		return nil, err
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	res.Body = io.NopCloser(bytes.NewReader(body))
	checkContract(t, req, reqBody, res.StatusCode, res.Header, body)
	return res, nil
}
