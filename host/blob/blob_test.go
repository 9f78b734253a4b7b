package blob_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/reelforge/reelforge/host/blob"
	"github.com/reelforge/reelforge/host/blob/blobtest"
)

func stores(t *testing.T) map[string]blob.Store {
	t.Helper()
	return map[string]blob.Store{"local": blob.NewDir(t.TempDir()), "s3": blobtest.NewS3(t)}
}

func TestStores(t *testing.T) {
	t.Parallel()
	for kind, st := range stores(t) {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			if st.Kind() != kind {
				t.Errorf("Kind() = %q, want %q", st.Kind(), kind)
			}
			data := bytes.Repeat([]byte("reelforge\x00\xff"), 1000)
			const key = "assets/u-1/0b7d3a9e-6a57-4a8e-9a43-1c1b1b0f0c11.png"
			if err := st.Put(ctx, key, bytes.NewReader(data), int64(len(data)), "image/png"); err != nil {
				t.Fatalf("Put() = %v", err)
			}
			rc, size, err := st.Open(ctx, key)
			if err != nil {
				t.Fatalf("Open() = %v", err)
			}
			got, err := io.ReadAll(rc)
			rc.Close()
			if err != nil || size != int64(len(data)) || !bytes.Equal(got, data) {
				t.Errorf("Open() read %d bytes (size %d), %v; want the %d bytes put", len(got), size, err, len(data))
			}
			if n, err := st.Size(ctx, key); err != nil || n != int64(len(data)) {
				t.Errorf("Size() = %d, %v; want %d", n, err, len(data))
			}
			for _, r := range [][2]int64{{0, 1}, {5, 100}, {int64(len(data)) - 7, 7}, {3, 0}} {
				rc, err := st.OpenRange(ctx, key, r[0], r[1])
				if err != nil {
					t.Fatalf("OpenRange(%d, %d) = %v", r[0], r[1], err)
				}
				got, err := io.ReadAll(rc)
				rc.Close()
				if want := data[r[0] : r[0]+r[1]]; err != nil || !bytes.Equal(got, want) {
					t.Errorf("OpenRange(%d, %d) = %q, %v; want %q", r[0], r[1], got, err, want)
				}
			}
			if _, err := st.Size(ctx, "assets/u-1/missing.png"); !errors.Is(err, blob.ErrNotFound) {
				t.Errorf("Size(missing) = %v, want ErrNotFound", err)
			}
			if _, err := st.OpenRange(ctx, "assets/u-1/missing.png", 0, 1); !errors.Is(err, blob.ErrNotFound) {
				t.Errorf("OpenRange(missing) = %v, want ErrNotFound", err)
			}
			if _, _, err := st.Open(ctx, "assets/u-1/missing.png"); !errors.Is(err, blob.ErrNotFound) {
				t.Errorf("Open(missing) = %v, want ErrNotFound", err)
			}
			if err := st.Delete(ctx, key); err != nil {
				t.Fatalf("Delete() = %v", err)
			}
			if _, _, err := st.Open(ctx, key); !errors.Is(err, blob.ErrNotFound) {
				t.Errorf("Open(deleted) = %v, want ErrNotFound", err)
			}
			if err := st.Delete(ctx, key); err != nil {
				t.Errorf("Delete(missing) = %v, want nil", err)
			}
			for _, bad := range []string{"", "../x", "a/../../x", "/etc/passwd", "a//b", "a/./b", `a\b`, "a/b c"} {
				if err := st.Put(ctx, bad, strings.NewReader("x"), 1, ""); err == nil {
					t.Errorf("Put(%q) succeeded, want the key refused", bad)
				}
				if _, _, err := st.Open(ctx, bad); err == nil {
					t.Errorf("Open(%q) succeeded, want the key refused", bad)
				}
			}
		})
	}
}

func TestDirPutShortBody(t *testing.T) {
	t.Parallel()
	d := blob.NewDir(t.TempDir())
	if err := d.Put(context.Background(), "a/b.bin", strings.NewReader("abc"), 10, ""); err == nil {
		t.Fatal("Put of a body shorter than its size succeeded")
	}
	if _, _, err := d.Open(context.Background(), "a/b.bin"); !errors.Is(err, blob.ErrNotFound) {
		t.Errorf("Open after a failed Put = %v, want ErrNotFound (nothing left behind)", err)
	}
}

func TestS3(t *testing.T) {
	t.Parallel()
	cfg := blobtest.S3(t, "present")
	s, err := blob.NewS3(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Check(context.Background()); err != nil {
		t.Errorf("Check() = %v", err)
	}
	cfg.Bucket = "absent"
	if s, _ = blob.NewS3(cfg); s.Check(context.Background()) == nil {
		t.Errorf("Check() of a missing bucket = nil, want an error")
	}
	for name, bad := range map[string]blob.S3Config{
		"no bucket":      {AccessKeyID: "k", SecretAccessKey: "s"},
		"no credentials": {Bucket: "b"},
		"bad endpoint":   {Bucket: "b", AccessKeyID: "k", SecretAccessKey: "s", Endpoint: "minio:9000"},
	} {
		if _, err := blob.NewS3(bad); err == nil {
			t.Errorf("NewS3(%s) succeeded", name)
		}
	}
}
