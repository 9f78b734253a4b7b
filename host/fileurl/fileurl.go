// Package fileurl makes and checks the signed, expiring URLs of the files the host serves
// (GET /api/assets/files/<key> and GET /api/materials/<id>/file), so that a <video>, an <img>, a
// <track> or a shared link reaches a file without an Authorization header, like an S3 presigned
// URL.
//
// What is stored (run results, assets' file_url, events' data) keeps the plain path, a stable
// reference; URLs are signed when they are handed out (Signer.Sign, Signer.SignJSON), so every
// read gets fresh ones. A signed URL is the path plus two query parameters: expires (Unix
// seconds) and signature (base64url HMAC-SHA256 over method, path and expiry). The key is derived
// from the host's JWT secret, so every host that accepts a user's tokens accepts the URLs made for
// them, and no second secret has to be kept or shared.
package fileurl

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/reelforge/reelforge/host/blob"
)

const (
	// AssetsPath is the route prefix of a stored file by its key: key "assets/<rest>" is served
	// at AssetsPath + "<rest>".
	AssetsPath = "/api/assets/files/"
	// materialsPath is the prefix of GET /api/materials/<id>/file.
	materialsPath = "/api/materials/"

	// ExpiresParam and SignatureParam are the query parameters of a signed URL.
	ExpiresParam   = "expires"
	SignatureParam = "signature"

	// DefaultTTL is how long a URL stays valid when FILE_URL_TTL is not set.
	DefaultTTL = time.Hour
)

// Errors of Verify and Check. ErrNotFileURL and ErrUnsigned mean the URL is not one this package
// made; ErrBadSignature and ErrExpired that it was altered or has run out (403 on the file routes).
var (
	ErrNotFileURL   = errors.New("fileurl: not a file URL of this host")
	ErrUnsigned     = errors.New("fileurl: the URL carries no signature")
	ErrBadSignature = errors.New("fileurl: the URL's signature does not match")
	ErrExpired      = errors.New("fileurl: the URL has expired")
)

// Signer signs and verifies file URLs with one key and lifetime. It is safe for concurrent use.
type Signer struct {
	key []byte
	ttl time.Duration
	now func() time.Time
}

// New returns a Signer keyed by secret (the host's JWT secret; the URL key is derived from it and
// differs from the tokens' key) whose URLs live ttl (DefaultTTL when ttl <= 0).
func New(secret string, ttl time.Duration) *Signer {
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte("reelforge file URLs v1"))
	return &Signer{key: m.Sum(nil), ttl: ttl, now: time.Now}
}

// WithClock returns a copy of s that reads the time from now (tests).
func (s *Signer) WithClock(now func() time.Time) *Signer {
	c := *s
	c.now = now
	return &c
}

// TTL is how long the URLs s makes stay valid (at least; see Sign).
func (s *Signer) TTL() time.Duration { return s.ttl }

// IsFileURL reports whether p (a path, without query) names a file route of the host:
// AssetsPath followed by a valid storage key's rest, or /api/materials/<id>/file.
func IsFileURL(p string) bool {
	if rest, ok := strings.CutPrefix(p, AssetsPath); ok {
		return blob.ValidKey("assets/" + rest)
	}
	if rest, ok := strings.CutPrefix(p, materialsPath); ok {
		id, ok := strings.CutSuffix(rest, "/file")
		return ok && id != "" && len(id) <= 64 && blob.ValidKey(id) && !strings.Contains(id, ".")
	}
	return false
}

// KeyOf is the storage key an AssetsPath URL names ("" for any other URL); a query is ignored.
func KeyOf(u string) string {
	p, _, _ := strings.Cut(u, "?")
	rest, ok := strings.CutPrefix(p, AssetsPath)
	if !ok || !blob.ValidKey("assets/"+rest) {
		return ""
	}
	return "assets/" + rest
}

// OfKey is the AssetsPath URL (unsigned: the stable reference to store) of a key "assets/...".
func OfKey(key string) string { return AssetsPath + strings.TrimPrefix(key, "assets/") }

// OfMaterial is the URL (unsigned) of GET /api/materials/<id>/file.
func OfMaterial(id string) string { return materialsPath + id + "/file" }

// Unsigned is u without its signature and expiry: the stable reference to store. Any other
// query is dropped too, since a file URL has none that names the file.
func Unsigned(u string) string {
	p, _, _ := strings.Cut(u, "?")
	return p
}

// Sign returns u (a file URL of the host, signed or not, with or without a query) signed for GET
// and HEAD until about TTL from now; any other string is returned unchanged.
//
// The expiry is rounded up to a tenth of the TTL, so a URL lives between TTL and 1.1 TTL, and
// listings read within the same tenth hand out the same URL: a page that re-renders an <img> or
// <video> from a fresh listing does not reload it, and the browser's cache keeps serving it.
func (s *Signer) Sign(u string) string {
	p := Unsigned(u)
	if !IsFileURL(p) {
		return u
	}
	step := max(s.ttl/10, time.Second)
	exp := s.now().Add(s.ttl).Add(step - time.Nanosecond).Truncate(step).Unix()
	return p + "?" + ExpiresParam + "=" + strconv.FormatInt(exp, 10) + "&" + SignatureParam + "=" + s.mac(p, exp)
}

// mac is the signature of a GET of path p until exp.
func (s *Signer) mac(p string, exp int64) string {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte("GET\n" + p + "\n" + strconv.FormatInt(exp, 10)))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// Signed reports whether query carries a signature (the request is to be judged by it).
func Signed(query url.Values) bool { return query.Has(SignatureParam) }

// Verify checks a request for path p with query: method must be GET or HEAD (a HEAD is a GET
// without its body), p a file route, and the signature must match an expiry not yet past. It
// returns the expiry. Signature, expiry and path are checked before anything else is done, so an
// altered URL costs one HMAC.
func (s *Signer) Verify(method, p string, query url.Values) (time.Time, error) {
	if method != "GET" && method != "HEAD" {
		return time.Time{}, ErrBadSignature
	}
	if !IsFileURL(p) {
		return time.Time{}, ErrNotFileURL
	}
	sig, expRaw := query.Get(SignatureParam), query.Get(ExpiresParam)
	if sig == "" {
		return time.Time{}, ErrUnsigned
	}
	exp, err := strconv.ParseInt(expRaw, 10, 64)
	if err != nil || strconv.FormatInt(exp, 10) != expRaw {
		return time.Time{}, ErrBadSignature
	}
	if subtle.ConstantTimeCompare([]byte(sig), []byte(s.mac(p, exp))) != 1 {
		return time.Time{}, ErrBadSignature
	}
	at := time.Unix(exp, 0)
	if !s.now().Before(at) {
		return at, ErrExpired
	}
	return at, nil
}

// Check verifies a URL handed back to the host (a media reference in a request body): absolute
// (any scheme and host: the one a client reached the host by) or a path, with its signature. It
// returns the stable, unsigned path to store. A URL that is not a file URL of the host gives
// ErrNotFileURL, one without a signature ErrUnsigned.
func (s *Signer) Check(raw string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || u.Fragment != "" || u.User != nil {
		return "", ErrNotFileURL
	}
	if u.Scheme != "" && u.Scheme != "http" && u.Scheme != "https" {
		return "", ErrNotFileURL
	}
	p := u.EscapedPath()
	if _, err := s.Verify("GET", p, u.Query()); err != nil {
		return "", err
	}
	return p, nil
}

// SignJSON returns the JSON document b with every string value that is a file URL of the host
// (signed or not) replaced by a freshly signed one; the rest of b is kept byte for byte. b is
// returned as is when it names no file (the common case costs two substring searches).
func (s *Signer) SignJSON(b []byte) []byte {
	if !bytes.Contains(b, []byte("/api/assets/files")) && !bytes.Contains(b, []byte("/api/materials")) {
		return b
	}
	var out []byte
	last := 0
	for i := 0; i < len(b); i++ {
		if b[i] != '"' {
			continue
		}
		start, end := i, stringEnd(b, i)
		if end < 0 {
			break // not JSON: leave the rest as it is
		}
		i = end
		tok := b[start : end+1]
		if len(tok) < 3 || (tok[1] != '/' && tok[1] != '\\') { // a path starts with "/" (or "\/")
			continue
		}
		var v string
		if json.Unmarshal(tok, &v) != nil {
			continue
		}
		signed, ok := s.signList(v)
		if !ok {
			continue
		}
		if out == nil {
			out = make([]byte, 0, len(b)+256)
		}
		// A signed URL is made of a storage key's characters and the query's ?, = and &: it
		// needs no escaping (json.Marshal would write & as \u0026).
		out = append(append(append(append(out, b[last:start]...), '"'), signed...), '"')
		last = end + 1
	}
	if out == nil {
		return b
	}
	return append(out, b[last:]...)
}

// signList signs v when it is a file URL, or a comma-separated list of file URLs (the form of a
// run's `media` input); a string holding anything else is text, and ok is false.
func (s *Signer) signList(v string) (signed string, ok bool) {
	parts := strings.Split(v, ",")
	for i, part := range parts {
		part = strings.TrimSpace(part)
		if !IsFileURL(Unsigned(part)) {
			return "", false
		}
		parts[i] = s.Sign(part)
	}
	return strings.Join(parts, ","), true
}

// stringEnd is the index of the quote that closes the JSON string opening at b[start], or -1.
func stringEnd(b []byte, start int) int {
	for j := start + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j
		}
	}
	return -1
}
