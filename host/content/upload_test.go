package content

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"

	"github.com/reelforge/reelforge/host/blob"
	"github.com/reelforge/reelforge/host/blob/blobtest"
	"github.com/reelforge/reelforge/sdk/errcode"
)

// stream hides the Seek of a reader, like a body that is not a multipart file.
type stream struct{ r io.Reader }

func (s stream) Read(p []byte) (int, error) { return s.r.Read(p) }

func TestStoreFile(t *testing.T) {
	t.Parallel()
	png := append([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), bytes.Repeat([]byte{7}, 900)...)
	big := append(append([]byte{}, png...), make([]byte, 1024)...)
	for kind, st := range map[string]blob.Store{"local": blob.NewDir(t.TempDir()), "s3": blobtest.NewS3(t)} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			s := New(Config{Blobs: st, UploadLimit: 1024})
			tests := map[string]struct {
				body       io.Reader
				wantStatus int // 0: stored
			}{
				"multipart file":      {bytes.NewReader(png), 0},
				"stream":              {stream{bytes.NewReader(png)}, 0},
				"multipart too large": {bytes.NewReader(big), 413},
				"stream too large":    {stream{bytes.NewReader(big)}, 413},
			}
			for name, tc := range tests {
				a, err := s.storeFile(context.Background(), UploadInput{UserID: "u-1", Name: "x.png", Size: -1, Body: tc.body})
				if tc.wantStatus != 0 {
					if e := errcode.As(err); e == nil || e.HTTPStatus() != tc.wantStatus {
						t.Errorf("%s: storeFile = %v, want status %d", name, err, tc.wantStatus)
					}
					continue
				}
				if err != nil {
					t.Fatalf("%s: storeFile = %v", name, err)
				}
				rc, size, err := st.Open(context.Background(), a.FilePath)
				if err != nil {
					t.Fatalf("%s: Open(%s) = %v", name, a.FilePath, err)
				}
				got, _ := io.ReadAll(rc)
				rc.Close()
				if !bytes.Equal(got, png) || size != int64(len(png)) || a.FileSize != size ||
					!strings.HasPrefix(a.FilePath, "assets/u-1/") || !strings.HasSuffix(a.FilePath, ".png") {
					t.Errorf("%s: stored %d bytes at %s (record says %d), want the upload under assets/u-1/", name, len(got), a.FilePath, a.FileSize)
				}
			}
		})
	}
}

func TestStoreFileStoreDown(t *testing.T) {
	t.Parallel()
	cfg := blobtest.S3(t, "b")
	cfg.Endpoint = "http://127.0.0.1:1" // nothing listens there
	st, err := blob.NewS3(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := New(Config{Blobs: st})
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
	_, err = s.storeFile(context.Background(), UploadInput{UserID: "u-1", Size: -1, Body: bytes.NewReader(png)})
	if e := errcode.As(err); e == nil || e.Code != errcode.ExternalService {
		t.Errorf("storeFile with the object store down = %v, want EXTERNAL_SERVICE_ERROR", err)
	}
}
