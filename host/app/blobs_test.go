package app

import (
	"bytes"
	"io"
	"log/slog"
	"testing"

	"github.com/reelforge/reelforge/host/blob/blobtest"
	"github.com/reelforge/reelforge/host/config"
)

// TestBlobsFromConfig: without S3_BUCKET uploads go to DATA_DIR; with it, to the bucket the S3_*
// variables name (a real S3 wire protocol, in process).
func TestBlobsFromConfig(t *testing.T) {
	t.Parallel()
	s3 := blobtest.S3(t, "uploads")
	tests := map[string]struct {
		env  map[string]string
		kind string
	}{
		"default": {map[string]string{"DATA_DIR": t.TempDir()}, "local"},
		"s3": {map[string]string{"DATA_DIR": t.TempDir(), "S3_BUCKET": s3.Bucket, "S3_ENDPOINT": s3.Endpoint,
			"S3_ACCESS_KEY_ID": s3.AccessKeyID, "S3_SECRET_ACCESS_KEY": s3.SecretAccessKey}, "s3"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cfg, err := config.LoadFrom(func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok })
			if err != nil {
				t.Fatal(err)
			}
			st, err := newBlobs(t.Context(), cfg, slog.New(slog.DiscardHandler))
			if err != nil || st.Kind() != tc.kind {
				t.Fatalf("newBlobs = %v, %v; want a %s store", st, err, tc.kind)
			}
			data := []byte("\x89PNG\r\n\x1a\n")
			if err := st.Put(t.Context(), "assets/u/x.png", bytes.NewReader(data), int64(len(data)), "image/png"); err != nil {
				t.Fatal(err)
			}
			rc, _, err := st.Open(t.Context(), "assets/u/x.png")
			if err != nil {
				t.Fatal(err)
			}
			defer rc.Close()
			if got, _ := io.ReadAll(rc); !bytes.Equal(got, data) {
				t.Errorf("read back %q, want %q", got, data)
			}
		})
	}
}
