package api

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"maps"
	"mime/multipart"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"github.com/reelforge/reelforge/sdk/errcode"
)

// Request bodies are bounded before anything is read or allocated for them (issue 37: fasthttp
// allocated a body's declared Content-Length, up to the one app-wide limit, before any handler
// ran, so a few connections that sent only headers took hundreds of MB). The server streams
// request bodies (fiber.Config.StreamRequestBody): it reads the headers and at most 8 KB of the
// body, and the rest is read here, bounded, or by an upload route's form parser.
//
//   - A declared Content-Length over the route's limit is refused 413 from the headers alone
//     (serverHooks), before any byte of the body is read.
//   - Every route but the uploads takes a body of at most BODY_LIMIT_BYTES, whatever its
//     Content-Type says, read into memory as it arrives (limitBodies).
//   - The upload routes (uploadRoutes) take a multipart/form-data body of at most
//     UPLOAD_LIMIT_BYTES plus the form's overhead, parsed after authentication as it arrives, its
//     files past 8 KB written to temporary files, never held whole in memory (uploadForm).
//   - Headers and a body of an ordinary route must arrive within readTimeout of the request's
//     first byte, an upload's within uploadReadTimeout of its headers: a connection that stalls
//     costs its read buffer until then.

// uploadRoutes are the only routes that take a body larger than BODY_LIMIT_BYTES.
var uploadRoutes = map[string]bool{
	"/api/knowledge/upload":   true,
	"/api/materials/upload":   true,
	"/api/inspiration/upload": true,
}

const (
	readTimeout       = 30 * time.Second
	uploadReadTimeout = 2 * time.Minute
	// formOverhead is what a multipart body may hold beside its file: boundaries, part headers and
	// the small fields (title, project_id, tags, ...).
	formOverhead = 64 << 10
	localUpload  = "upload_form"
)

// isUpload reports whether a request is an upload: a POST to an upload route with a multipart
// body (it has a boundary). Paths compare as Fiber routes them: without case or a trailing slash.
func isUpload(method string, path []byte, contentType []byte) bool {
	if method != fiber.MethodPost {
		return false
	}
	p := strings.TrimSuffix(strings.ToLower(string(path)), "/")
	if !uploadRoutes[p] {
		return false
	}
	ct := strings.ToLower(string(contentType))
	return strings.HasPrefix(ct, fiber.MIMEMultipartForm) && strings.Contains(ct, "boundary=")
}

// bodyLimit is the most bytes a request's body may hold.
func (s *Server) bodyLimit(upload bool) int {
	if upload {
		return s.Config.UploadLimit + formOverhead
	}
	return s.Config.BodyLimit
}

// headerOverLimit marks a request whose declared body is over its route's limit (serverHooks);
// a client's own header of that name is dropped.
const headerOverLimit = "X-Reelforge-Body-Over-Limit"

// serverHooks sizes each request from its headers, before fasthttp reads any of its body: an
// upload gets its longer read deadline; a request that declares a body over its route's limit
// has it declared empty instead (and no Expect: 100-continue), so that nothing of it is read or
// allocated, and is marked for limitBodies to refuse with 413 and close the connection.
func (s *Server) serverHooks(srv *fasthttp.Server) {
	srv.HeaderReceived = func(h *fasthttp.RequestHeader) fasthttp.RequestConfig {
		h.Del(headerOverLimit)
		path, _, _ := bytes.Cut(h.RequestURI(), []byte("?"))
		upload := isUpload(string(h.Method()), path, h.ContentType())
		limit := s.bodyLimit(upload)
		conf := fasthttp.RequestConfig{MaxRequestBodySize: limit}
		if upload {
			conf.ReadTimeout = uploadReadTimeout
		}
		if h.ContentLength() > limit {
			h.Set(headerOverLimit, strconv.Itoa(h.ContentLength()))
			h.Del(fiber.HeaderExpect)
			h.SetContentLength(0)
		}
		return conf
	}
}

// limitBodies refuses a body over its route's limit, from its declared length when it has one;
// a body that is not an upload is then read, bounded, so that every later reader has it in
// memory. An upload's body is left on the connection for uploadForm.
func (s *Server) limitBodies(c *fiber.Ctx) error {
	req := c.Request()
	if enc := req.Header.Peek(fiber.HeaderContentEncoding); len(enc) > 0 && !bytes.EqualFold(enc, []byte("identity")) {
		// Fiber would inflate it in c.Body() with no bound: a small gzip body can be gigabytes.
		c.Context().SetConnectionClose()
		return errcode.New(errcode.Validation, "Compressed request bodies (Content-Encoding) are not accepted").
			WithStatus(fiber.StatusUnsupportedMediaType)
	}
	upload := isUpload(c.Method(), []byte(c.Path()), req.Header.ContentType())
	limit := s.bodyLimit(upload)
	if len(req.Header.Peek(headerOverLimit)) > 0 || req.Header.ContentLength() > limit {
		c.Context().SetConnectionClose() // the body is left unread: the connection cannot carry another request
		return tooLarge()
	}
	if upload {
		c.Locals(localUpload, true)
		// Whatever part of the body the handlers leave unread must not be read as a next request.
		c.Context().SetConnectionClose()
		return c.Next()
	}
	if req.IsBodyStream() {
		body, err := io.ReadAll(io.LimitReader(req.BodyStream(), int64(limit)+1))
		if err != nil {
			c.Context().SetConnectionClose()
			return errcode.New(errcode.Validation, "The request body could not be read").WithStatus(fiber.StatusRequestTimeout)
		}
		if len(body) > limit {
			c.Context().SetConnectionClose()
			return tooLarge()
		}
		req.SetBodyRaw(body)
	}
	return c.Next()
}

// uploading reports whether limitBodies found the request an upload (its body not read yet).
func uploading(c *fiber.Ctx) bool {
	up, _ := c.Locals(localUpload).(bool)
	return up
}

// uploadForm reads an upload's multipart form, after authentication, bounded by the upload
// limit, and refuses text no database stores alike in its fields and file names (as cleanInput
// does for a JSON body).
func (s *Server) uploadForm(c *fiber.Ctx) error {
	if !uploading(c) {
		return c.Next()
	}
	form, err := c.Context().MultipartFormWithLimit(s.bodyLimit(true))
	if errors.Is(err, fasthttp.ErrBodyTooLarge) {
		return tooLarge()
	}
	if err != nil {
		return errcode.New(errcode.Validation, "The body is not a readable multipart/form-data form")
	}
	if err := cleanForm(form); err != nil {
		return err
	}
	return c.Next()
}

// cleanForm refuses a NUL character or bytes that are not UTF-8 in a form's fields and file names.
func cleanForm(form *multipart.Form) error {
	for k, vs := range form.Value {
		for _, v := range vs {
			if !cleanText(k) || !cleanText(v) {
				return errcode.Invalid(strings.ToValidUTF8(k, ""), "must be UTF-8 text without NUL characters")
			}
		}
	}
	for k, fhs := range form.File {
		for _, fh := range fhs {
			if !cleanText(fh.Filename) {
				return errcode.Invalid(strings.ToValidUTF8(k, ""), "file name must be UTF-8 text without NUL characters")
			}
		}
	}
	return nil
}

// writeBody writes what identifies a request's body to h: the body itself, or an upload's form
// (its fields in order, and each file's field, name, type and bytes), which is on disk and
// in the form, not in the body.
func writeBody(c *fiber.Ctx, h hash.Hash) error {
	if !uploading(c) {
		h.Write(c.Body())
		return nil
	}
	form, err := c.MultipartForm() // read by uploadForm already
	if err != nil {
		return err
	}
	for _, k := range slices.Sorted(maps.Keys(form.Value)) {
		fmt.Fprintf(h, "field %q %q\n", k, form.Value[k])
	}
	for _, k := range slices.Sorted(maps.Keys(form.File)) {
		for _, fh := range form.File[k] {
			fmt.Fprintf(h, "file %q %q %q %d\n", k, fh.Filename, fh.Header.Get(fiber.HeaderContentType), fh.Size)
			f, err := fh.Open()
			if err != nil {
				return err
			}
			sum := sha256.New()
			_, err = io.Copy(sum, f)
			f.Close()
			if err != nil {
				return err
			}
			h.Write([]byte(hex.EncodeToString(sum.Sum(nil))))
		}
	}
	return nil
}
