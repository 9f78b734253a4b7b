// Package blob keeps the bytes of uploaded files (materials and inspiration media): in a local
// directory (DATA_DIR, the default) or in an S3-compatible object store when S3_BUCKET is set.
//
// The database keeps the asset records and each one's key; a Store only holds bytes. Keys are made
// by the host ("assets/<user id>/<uuid><ext>") and never from a client's file name; both stores
// refuse a key that could climb out of its root. Files are served through the host, which checks
// ownership first (host/content), so a bucket never needs to be public.
package blob

import (
	"context"
	"errors"
	"io"
	"strings"
)

// ErrNotFound is returned by Open when the key holds nothing.
var ErrNotFound = errors.New("blob: not found")

// Store holds objects by key. Implementations are safe for concurrent use.
type Store interface {
	// Put stores exactly size bytes of body under a key that is not in use yet. body is seekable
	// because an S3 request over plain HTTP is signed over a hash of its payload.
	Put(ctx context.Context, key string, body io.ReadSeeker, size int64, contentType string) error
	// Open returns the object's bytes and its size, or ErrNotFound. The caller closes the reader;
	// ctx must stay live while it is read.
	Open(ctx context.Context, key string) (io.ReadCloser, int64, error)
	// Size returns the object's size in bytes, or ErrNotFound.
	Size(ctx context.Context, key string) (int64, error)
	// OpenRange returns n bytes of the object from offset off (off+n must not pass its size), or
	// ErrNotFound. It serves HTTP range requests; the caller closes the reader.
	OpenRange(ctx context.Context, key string, off, n int64) (io.ReadCloser, error)
	// Delete removes the object; a missing one is not an error.
	Delete(ctx context.Context, key string) error
	// Kind names the store for logs and asset metadata: "local" or "s3".
	Kind() string
}

// ValidKey reports whether key is a relative slash-separated path of plain segments (letters,
// digits, '.', '-', '_'), none of them "." or "..".
func ValidKey(key string) bool {
	if key == "" || len(key) > 512 {
		return false
	}
	for _, seg := range strings.Split(key, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return false
		}
		for _, r := range seg {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' || r == '_') {
				return false
			}
		}
	}
	return true
}

func errKey(key string) error { return errors.New("blob: invalid key " + quote(key)) }

func quote(s string) string {
	if len(s) > 80 {
		s = s[:80] + "..."
	}
	return `"` + s + `"`
}
