package blob

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Dir is a Store in a local directory: key "a/b.png" is the file <root>/a/b.png.
type Dir struct {
	root string
}

// NewDir returns the Store rooted at root (created on the first Put).
func NewDir(root string) *Dir { return &Dir{root: root} }

// Kind implements Store.
func (d *Dir) Kind() string { return "local" }

func (d *Dir) path(key string) (string, error) {
	if !ValidKey(key) {
		return "", errKey(key)
	}
	return filepath.Join(d.root, filepath.FromSlash(key)), nil
}

// Put implements Store. The file is created exclusively, so a key is never overwritten, and
// removed again when fewer than size bytes arrive.
func (d *Dir) Put(_ context.Context, key string, body io.ReadSeeker, size int64, _ string) error {
	p, err := d.path(key)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o750); err != nil {
		return fmt.Errorf("blob: make folder: %w", err)
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o640)
	if err != nil {
		return fmt.Errorf("blob: create %s: %w", key, err)
	}
	_, err = io.CopyN(f, body, size)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(p) // a partial file is removed where it can be; the write error is what is returned
		return fmt.Errorf("blob: write %s: %w", key, err)
	}
	return nil
}

// Open implements Store.
func (d *Dir) Open(_ context.Context, key string) (io.ReadCloser, int64, error) {
	p, err := d.path(key)
	if err != nil {
		return nil, 0, err
	}
	f, err := os.Open(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil, 0, ErrNotFound
	}
	if err != nil {
		return nil, 0, fmt.Errorf("blob: open %s: %w", key, err)
	}
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		f.Close()
		return nil, 0, ErrNotFound
	}
	return f, st.Size(), nil
}

// Size implements Store.
func (d *Dir) Size(_ context.Context, key string) (int64, error) {
	p, err := d.path(key)
	if err != nil {
		return 0, err
	}
	st, err := os.Stat(p)
	if errors.Is(err, os.ErrNotExist) || err == nil && !st.Mode().IsRegular() {
		return 0, ErrNotFound
	}
	if err != nil {
		return 0, fmt.Errorf("blob: stat %s: %w", key, err)
	}
	return st.Size(), nil
}

// OpenRange implements Store.
func (d *Dir) OpenRange(ctx context.Context, key string, off, n int64) (io.ReadCloser, error) {
	rc, _, err := d.Open(ctx, key)
	if err != nil {
		return nil, err
	}
	f := rc.(*os.File)
	return struct {
		io.Reader
		io.Closer
	}{io.NewSectionReader(f, off, n), f}, nil
}

// Delete implements Store.
func (d *Dir) Delete(_ context.Context, key string) error {
	p, err := d.path(key)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("blob: delete %s: %w", key, err)
	}
	return nil
}
