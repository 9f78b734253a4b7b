package api

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/danielgtaylor/huma/v2"
	"github.com/gofiber/fiber/v2"

	"github.com/reelforge/reelforge/host/fileurl"
	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/sdk/errcode"
)

// The file routes serve the bytes of assets (uploads and the files runs make) to their owner's
// Authorization header or to a signed URL (host/fileurl), so media elements and shared links work.

const (
	localSignedUntil = "signed_until" // the expiry of the signed URL a file request was admitted by
	// fileCSP confines a user's file opened as a page: no script runs (script-src falls back to
	// 'none'), nothing is fetched but the file itself (the image or the media element a browser
	// shows it in), no form posts; and, but for audio and video, a sandbox (opaque origin, no
	// plugins, popups or top navigation). Chromium shows a video or audio file in a document whose
	// media element fetches it again with crossorigin=anonymous: from a sandbox's opaque origin
	// that fetch fails, and a shared link would not play (seen in make e2e-browser).
	fileCSP      = "default-src 'none'; img-src 'self'; media-src 'self'; style-src 'unsafe-inline'; form-action 'none'"
	fileCSPBoxed = fileCSP + "; sandbox"
)

// fileOperations declares the two file routes (typed: operations.go) on files, the API served
// ahead of the authenticated group, whose middleware would refuse a request without a header:
// fileAccess admits them (by the URL's signature or the Authorization header) and fileRateLimit
// counts them, before their input is read. Their answer is the file's bytes, which sendAsset
// streams (huma.StreamResponse), with the headers of a file answer.
func (s *Server) fileOperations(files huma.API) {
	const tag = "Content"
	before := []fiber.Handler{s.fileAccess, s.fileRateLimit}
	register(files, op{Method: "GET", Path: "/api/materials/{id}/file", Tag: tag,
		Summary: "An asset's file by the asset's id (uploaded or made by a run); Range requests give 206",
		Desc:    fileDesc, Errors: []int{404}, Before: before, Answer: fileAnswer()}, s.materialFile)
	register(files, op{Method: "GET", Path: "/api/assets/files/*", Tag: tag,
		Summary: "An asset's file by its storage key (the file_url of files runs make); Range requests give 206",
		Desc:    fileDesc, Errors: []int{404}, Before: before, Answer: fileAnswer()}, s.assetFile)
}

const fileDesc = "Every file URL the API hands out (file_url, run outputs, events, WebSocket frames) is signed: " +
	"`?expires=<unix seconds>&signature=<HMAC>` lets a `<video>`, `<img>`, `<track>` or a shared link fetch it without a header " +
	"for FILE_URL_TTL (default 1 h); each read of a listing or result hands out fresh ones. An altered or expired URL answers 403, " +
	"a deleted file 404. With an Authorization header the owner's files are served whatever the query. The answer streams: " +
	"Range (206, 416), Accept-Ranges, ETag, Content-Disposition (`inline`, or `attachment` with `download=1`; the run's or " +
	"upload's name), a sandboxing Content-Security-Policy and `X-Content-Type-Options: nosniff`."

// fileAnswer documents a file answer: the bytes, with the file's own Content-Type.
func fileAnswer() *huma.Response {
	return &huma.Response{Description: "OK", Content: map[string]*huma.MediaType{"*/*": {Schema: &huma.Schema{
		Type: huma.TypeString, Format: "binary", Description: "the file's bytes with its own Content-Type (image/png, video/mp4, ...)"}}}}
}

// FileQuery is what a file URL's query may hold. fileAccess has checked the signature before the
// input is read; the handlers read download. Exported: huma reads the fields of exported embedded
// structs only.
type FileQuery struct {
	Expires   string `query:"expires" doc:"expiry of a signed URL (Unix seconds)"`
	Signature string `query:"signature" doc:"HMAC of a signed URL"`
	Download  string `query:"download" doc:"1: Content-Disposition attachment"`
}

type materialFileInput struct {
	ID string `path:"id"`
	FileQuery
}

// fileAccess admits a request to a file route by the URL's signature (any owner's file: the
// signature is the permission the host gave), or else by its Authorization header (then only the
// caller's files are found). A signature altered or past its expiry answers 403 unless a header
// admits the request; it is decided by one HMAC, before anything is looked up.
func (s *Server) fileAccess(c *fiber.Ctx) error {
	c.Set("X-Content-Type-Options", "nosniff")
	c.Set("Content-Security-Policy", fileCSPBoxed) // until the file's type is known (sendAsset)
	header := c.Get(fiber.HeaderAuthorization) != ""
	q, err := url.ParseQuery(string(c.Request().URI().QueryString()))
	if err == nil && fileurl.Signed(q) {
		exp, err := s.FileURLs.Verify(c.Method(), c.Path(), q)
		switch {
		case err == nil:
			c.Locals(localSignedUntil, exp)
			return c.Next()
		case header:
		case errors.Is(err, fileurl.ErrExpired):
			return errcode.New(errcode.Authorization, "The file URL has expired; read it again from the API for a fresh one")
		default:
			return errcode.New(errcode.Authorization, "The file URL's signature is not valid")
		}
	}
	if !header {
		return errcode.New(errcode.Authentication, "Missing bearer token or signed URL")
	}
	return s.authenticate(c)
}

// fileRateLimit counts a file request to its user, or (signed, without one) to its address.
func (s *Server) fileRateLimit(c *fiber.Ctx) error {
	if principal(c) != nil {
		return s.userRateLimit(c)
	}
	if ra := s.limits.user.take("file:"+c.IP(), time.Now()); ra > 0 {
		return rateLimited(ra)
	}
	return c.Next()
}

func (s *Server) materialFile(ctx context.Context, in *materialFileInput) (*huma.StreamResponse, error) {
	var a *store.Asset
	var err error
	if p := caller(ctx); p != nil {
		a, err = s.Content.OwnAsset(ctx, p.UserID, in.ID)
	} else {
		a, err = s.Content.LiveAsset(ctx, in.ID)
	}
	if err != nil {
		return nil, err
	}
	return s.streamAsset(a), nil
}

// assetFile serves a file by its storage key: GET /api/assets/files/<key after "assets/">, the
// file_url of the files runs make (uploads have it too).
func (s *Server) assetFile(ctx context.Context, _ *FileQuery) (*huma.StreamResponse, error) {
	c := fiberCtx(ctx)
	key := fileurl.KeyOf(c.Path())
	owner := principalUser(c)
	if owner == "" { // signed: the key names its owner, "assets/<owner>/..."
		if parts := strings.SplitN(key, "/", 3); len(parts) == 3 {
			owner = parts[1]
		}
	}
	a, err := s.Content.AssetAtKey(ctx, owner, key)
	if err != nil {
		return nil, err
	}
	return s.streamAsset(a), nil
}

func principalUser(c *fiber.Ctx) string {
	if p := principal(c); p != nil {
		return p.UserID
	}
	return ""
}

// streamAsset is a file route's answer: sendAsset writes it on the request's Fiber context, and
// its error (416, a file gone from the store) is answered by handleError, as any handler's.
func (s *Server) streamAsset(a *store.Asset) *huma.StreamResponse {
	return &huma.StreamResponse{Body: func(hc huma.Context) {
		fc := unwrapContext(hc)
		if err := s.sendAsset(fc.c, a); err != nil && fc.err == nil {
			fc.err = err
		}
	}}
}

// sendAsset streams an asset's bytes, whole or the one byte range a Range header asks for (a
// video element seeks that way). Streamed through the host rather than redirected to a presigned
// URL of the bucket: the checks before it stay the only way to a file, the headers below are the
// host's whatever the store, and a bucket never needs to be reachable by clients.
func (s *Server) sendAsset(c *fiber.Ctx, a *store.Asset) error {
	ctx := s.ctx(c)
	size, err := s.Content.FileSize(ctx, a)
	if err != nil {
		return err
	}
	// A stored file never changes (its key is new for each file): its key and size name its bytes.
	sum := sha256.Sum256([]byte(a.FilePath))
	etag := `"` + hex.EncodeToString(sum[:12]) + "-" + strconv.FormatInt(size, 36) + `"`
	c.Set(fiber.HeaderETag, etag)
	c.Set(fiber.HeaderAcceptRanges, "bytes")
	c.Set(fiber.HeaderCacheControl, s.fileCaching(c))
	if inm := c.Get(fiber.HeaderIfNoneMatch); inm != "" && etagListHas(inm, etag) {
		return c.SendStatus(fiber.StatusNotModified)
	}
	off, n, partial := int64(0), size, false
	if h := c.Get(fiber.HeaderRange); h != "" && ifRangeHolds(c.Get(fiber.HeaderIfRange), etag) {
		var ok bool
		if off, n, partial, ok = byteRange(h, size); !ok {
			c.Set(fiber.HeaderContentRange, fmt.Sprintf("bytes */%d", size))
			return errcode.New(errcode.Validation, "Range not satisfiable").WithStatus(fiber.StatusRequestedRangeNotSatisfiable)
		}
	}
	body, err := s.Content.OpenFile(context.WithoutCancel(ctx), a, off, n)
	if err != nil {
		return err
	}
	mimeType := a.MimeType
	if mimeType == "" {
		mimeType = fiber.MIMEOctetStream
	}
	if strings.HasPrefix(mimeType, "text/") && !strings.Contains(mimeType, "charset") {
		mimeType += "; charset=utf-8" // caption files (WebVTT, SRT) are UTF-8
	}
	c.Set(fiber.HeaderContentType, mimeType)
	if strings.HasPrefix(mimeType, "video/") || strings.HasPrefix(mimeType, "audio/") {
		c.Set("Content-Security-Policy", fileCSP)
	}
	disposition := "inline"
	if c.Query("download") == "1" {
		disposition = "attachment"
	}
	c.Set(fiber.HeaderContentDisposition, contentDisposition(disposition, fileName(a)))
	if partial {
		c.Set(fiber.HeaderContentRange, fmt.Sprintf("bytes %d-%d/%d", off, off+n-1, size))
		c.Status(fiber.StatusPartialContent)
	}
	return c.SendStream(body, int(n)) // fasthttp closes body once it is sent
}

// fileCaching is the Cache-Control of a file answer: the bytes never change, so a browser keeps
// them without asking again, but only its own copy (private), and, for a signed URL, no longer
// than the URL is valid: past that the same URL must answer 403 again.
func (s *Server) fileCaching(c *fiber.Ctx) string {
	maxAge := int64(3600)
	if exp, ok := c.Locals(localSignedUntil).(time.Time); ok {
		maxAge = max(0, int64(time.Until(exp)/time.Second))
	}
	return "private, max-age=" + strconv.FormatInt(maxAge, 10) + ", immutable"
}

// etagListHas reports whether an If-None-Match list names etag (weak or strong, or "*").
func etagListHas(list, etag string) bool {
	for _, t := range strings.Split(list, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == etag || t == "*" {
			return true
		}
	}
	return false
}

// ifRangeHolds: a Range is honoured when there is no If-Range, or it names this file's ETag (a
// date is not comparable here: the whole file is sent, as RFC 9110 13.1.5 allows).
func ifRangeHolds(ifRange, etag string) bool { return ifRange == "" || ifRange == etag }

// fileName is the name a download of a is saved under: its upload's or its run's name (see
// content.RecordRunFiles), with the stored file's extension when the name lacks it.
func fileName(a *store.Asset) string {
	name := strings.TrimSpace(a.OriginalName)
	if name == "" {
		name = path.Base(a.FilePath)
	}
	if ext := path.Ext(a.FilePath); ext != "" && !strings.EqualFold(path.Ext(name), ext) {
		name += ext
	}
	return name
}

// contentDisposition is a Content-Disposition of kind ("inline", "attachment") for a file named
// name (RFC 6266): filename holds an ASCII form of it (other characters, quotes, backslashes and
// path separators become "_"), and filename* (RFC 8187) the name itself when it differs.
func contentDisposition(kind, name string) string {
	var ascii strings.Builder
	for _, r := range name {
		if r < 0x20 || r >= 0x7f || r == '"' || r == '\\' || r == '/' || r == '%' {
			r = '_'
		}
		ascii.WriteRune(r)
	}
	v := kind + `; filename="` + ascii.String() + `"`
	if ascii.String() != name && utf8.ValidString(name) {
		v += "; filename*=UTF-8''" + extValue(name)
	}
	return v
}

// extValue percent-encodes s for an RFC 8187 ext-value: every byte but attr-char.
func extValue(s string) string {
	const attr = "!#$&+-.^_`|~"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		ch := s[i]
		if ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || strings.IndexByte(attr, ch) >= 0 {
			b.WriteByte(ch)
		} else {
			fmt.Fprintf(&b, "%%%02X", ch)
		}
	}
	return b.String()
}

// signFileURLs signs the file URLs in the JSON answers of the routes after it (fileurl.SignJSON):
// what is stored keeps the plain paths, and every read hands out fresh URLs. It runs outside the
// idempotency middleware, so a replayed answer gets fresh ones too.
func (s *Server) signFileURLs(c *fiber.Ctx) error {
	err := c.Next()
	res := c.Response()
	if err != nil || res.IsBodyStream() || !bytes.HasPrefix(res.Header.ContentType(), []byte(fiber.MIMEApplicationJSON)) {
		return err
	}
	body := res.Body()
	if signed := s.FileURLs.SignJSON(body); len(signed) != len(body) || !bytes.Equal(signed, body) {
		res.SetBody(signed)
	}
	return nil
}

// byteRange reads a Range header of one range (RFC 9110 14.1.2: "bytes=a-b", "bytes=a-",
// "bytes=-n") against a file of size bytes: the offset and length, whether it is answered as a
// range (206, even when it covers the whole file: some players insist), and false when it cannot be
// satisfied. A header of several ranges, or in another unit, is answered with the whole file (a
// server may ignore Range).
func byteRange(h string, size int64) (off, n int64, ranged, ok bool) {
	spec, found := strings.CutPrefix(strings.TrimSpace(h), "bytes=")
	if !found || strings.Contains(spec, ",") {
		return 0, size, false, true
	}
	first, last, found := strings.Cut(strings.TrimSpace(spec), "-")
	if !found {
		return 0, 0, false, false
	}
	if first == "" { // the last n bytes
		k, err := strconv.ParseInt(last, 10, 64)
		if err != nil || k <= 0 || size == 0 {
			return 0, 0, false, false
		}
		k = min(k, size)
		return size - k, k, true, true
	}
	a, err := strconv.ParseInt(first, 10, 64)
	if err != nil || a < 0 || a >= size {
		return 0, 0, false, false
	}
	b := size - 1
	if last != "" {
		if b, err = strconv.ParseInt(last, 10, 64); err != nil || b < a {
			return 0, 0, false, false
		}
		b = min(b, size-1)
	}
	return a, b - a + 1, true, true
}
