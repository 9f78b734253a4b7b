// Package blobtest starts an S3-compatible server for tests: gofakes3 in process, spoken to over
// real HTTP, so the S3 store is tested through its actual client and wire protocol. Only tests
// import it.
package blobtest

import (
	"net/http/httptest"
	"testing"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/reelforge/reelforge/host/blob"
)

// S3 starts a server holding an empty bucket, stopped when the test ends, and returns the
// configuration of a store using it.
func S3(t testing.TB, bucket string) blob.S3Config {
	t.Helper()
	backend := s3mem.New()
	if err := backend.CreateBucket(bucket); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gofakes3.New(backend).Server())
	t.Cleanup(srv.Close)
	return blob.S3Config{Endpoint: srv.URL, Bucket: bucket, Region: "us-east-1", AccessKeyID: "test-key",
		SecretAccessKey: "test-secret", UsePathStyle: true}
}

// NewS3 is a store on a fresh server (S3), failing the test when it cannot be made.
func NewS3(t testing.TB) *blob.S3 {
	t.Helper()
	s, err := blob.NewS3(S3(t, "reelforge-test"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}
