package api

import (
	"bytes"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"

	"github.com/reelforge/reelforge/sdk/errcode"
)

// cleanInput refuses, with 400 VALIDATION_ERROR, text no database can store the same way: a NUL
// character or bytes that are not UTF-8 in the path, a query parameter, a JSON body (raw or as a
// \u0000 escape) or a form field. PostgreSQL rejects both in text columns (a 500 there), SQLite
// stores them: the answer is the same on both drivers, and decided before any handler runs.
func (s *Server) cleanInput(c *fiber.Ctx) error {
	path := c.Path()
	if p, err := url.PathUnescape(path); err == nil {
		path = p
	}
	if !cleanText(path) {
		return errcode.Invalid("path", "must be UTF-8 text without NUL characters")
	}
	var bad string
	for k, v := range c.Context().QueryArgs().All() {
		if !cleanBytes(k) || !cleanBytes(v) {
			bad = strings.ToValidUTF8(strings.ReplaceAll(string(k), "\x00", ""), "")
			if bad == "" {
				bad = "query"
			}
			break
		}
	}
	if bad != "" {
		return errcode.Invalid(bad, "must be UTF-8 text without NUL characters")
	}
	if uploading(c) {
		return c.Next() // its form is read and cleaned after authentication (uploadForm)
	}
	body := c.Body()
	if len(body) == 0 {
		return c.Next()
	}
	// Any other body is read as JSON (decode ignores the Content-Type): multipart is parsed on
	// the upload routes only.
	ct := strings.ToLower(c.Get(fiber.HeaderContentType))
	if strings.Contains(ct, "json") || looksJSON(body) {
		if !utf8.Valid(body) {
			return errcode.New(errcode.Validation, "The JSON body is not UTF-8 text")
		}
		if jsonHasNUL(body) {
			return errcode.New(errcode.Validation, "The JSON body holds a NUL character (\\u0000), which text fields cannot store")
		}
	}
	return c.Next()
}

// looksJSON reports whether a body sent without a Content-Type is JSON text (decode reads such
// bodies as JSON); raw file bytes sent without one are left to their route.
func looksJSON(b []byte) bool {
	b = bytes.TrimLeft(b, " \t\r\n")
	return len(b) > 0 && (b[0] == '{' || b[0] == '[' || b[0] == '"')
}

func cleanText(s string) bool { return utf8.ValidString(s) && !strings.Contains(s, "\x00") }

func cleanBytes(b []byte) bool { return utf8.Valid(b) && bytes.IndexByte(b, 0) < 0 }

// jsonHasNUL reports whether a JSON text holds the escape \u0000 (a raw NUL byte is malformed JSON,
// which the decoder refuses on its own). An escaped backslash before "u0000" is not one.
func jsonHasNUL(b []byte) bool {
	if bytes.IndexByte(b, 0) >= 0 {
		return true
	}
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' || i+1 >= len(b) {
			continue
		}
		if b[i+1] == 'u' && i+5 < len(b) && string(b[i+2:i+6]) == "0000" {
			return true
		}
		i++ // skip the escaped character (a backslash too)
	}
	return false
}
