package blob

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// responseHeaderTimeout bounds the wait for the object store to start answering a request.
const responseHeaderTimeout = 30 * time.Second

// S3Config configures NewS3 (S3_* variables of host/config).
type S3Config struct {
	// Endpoint is the store's base URL (MinIO, Ceph, R2, ...); empty means AWS S3 of Region.
	Endpoint string
	Bucket   string
	Region   string // empty means us-east-1 (what most S3-compatible stores expect)
	// AccessKeyID and SecretAccessKey are static credentials: the host takes them from its own
	// configuration only, never from the AWS shared files or instance metadata.
	AccessKeyID     string
	SecretAccessKey string
	// UsePathStyle addresses the bucket as <endpoint>/<bucket>/<key> rather than as a host name
	// <bucket>.<endpoint>; most self-hosted stores need it.
	UsePathStyle bool
}

// S3 is a Store in a bucket of an S3-compatible object store.
type S3 struct {
	client *s3.Client
	bucket string
}

// NewS3 returns the Store of cfg. It does not contact the store: Check does.
func NewS3(cfg S3Config) (*S3, error) {
	if cfg.Bucket == "" {
		return nil, errors.New("blob: S3 needs a bucket")
	}
	if cfg.AccessKeyID == "" || cfg.SecretAccessKey == "" {
		return nil, errors.New("blob: S3 needs an access key id and a secret access key")
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	opts := s3.Options{
		Region:       cfg.Region,
		UsePathStyle: cfg.UsePathStyle,
		// A store that accepts a connection and then says nothing must not hold a request for
		// ever; no overall timeout, though, which would cut a large file streamed to a slow client.
		HTTPClient: awshttp.NewBuildableClient().WithTransportOptions(func(tr *http.Transport) {
			tr.ResponseHeaderTimeout = responseHeaderTimeout
		}),
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: cfg.AccessKeyID, SecretAccessKey: cfg.SecretAccessKey, Source: "reelforge S3_* settings"}, nil
		}),
	}
	if cfg.Endpoint != "" {
		u, err := url.Parse(cfg.Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("blob: S3 endpoint %q is not an http(s) URL", cfg.Endpoint)
		}
		opts.BaseEndpoint = aws.String(strings.TrimRight(cfg.Endpoint, "/"))
	}
	return &S3{client: s3.New(opts), bucket: cfg.Bucket}, nil
}

// Kind implements Store.
func (s *S3) Kind() string { return "s3" }

// Check asks the store whether the bucket exists and the credentials reach it.
func (s *S3) Check(ctx context.Context) error {
	if _, err := s.client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(s.bucket)}); err != nil {
		return fmt.Errorf("blob: bucket %s: %w", s.bucket, err)
	}
	return nil
}

// Put implements Store. One PutObject request carries the whole file (S3 takes up to 5 GiB in
// one; uploads are far below that), with its length and a checksum the store verifies.
func (s *S3) Put(ctx context.Context, key string, body io.ReadSeeker, size int64, contentType string) error {
	if !ValidKey(key) {
		return errKey(key)
	}
	// No If-None-Match: several S3-compatible stores do not implement conditional writes, and the
	// host's keys are fresh UUIDs.
	in := &s3.PutObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key), Body: body, ContentLength: aws.Int64(size)}
	if contentType != "" {
		in.ContentType = aws.String(contentType)
	}
	if _, err := s.client.PutObject(ctx, in); err != nil {
		return fmt.Errorf("blob: put %s: %w", key, err)
	}
	return nil
}

// Open implements Store.
func (s *S3) Open(ctx context.Context, key string) (io.ReadCloser, int64, error) {
	if !ValidKey(key) {
		return nil, 0, errKey(key)
	}
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key)})
	if err != nil {
		if notFound(err) {
			return nil, 0, ErrNotFound
		}
		return nil, 0, fmt.Errorf("blob: get %s: %w", key, err)
	}
	return out.Body, aws.ToInt64(out.ContentLength), nil
}

// Size implements Store.
func (s *S3) Size(ctx context.Context, key string) (int64, error) {
	if !ValidKey(key) {
		return 0, errKey(key)
	}
	out, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key)})
	if err != nil {
		if notFound(err) {
			return 0, ErrNotFound
		}
		return 0, fmt.Errorf("blob: head %s: %w", key, err)
	}
	return aws.ToInt64(out.ContentLength), nil
}

// OpenRange implements Store: one GET with a Range header.
func (s *S3) OpenRange(ctx context.Context, key string, off, n int64) (io.ReadCloser, error) {
	if !ValidKey(key) {
		return nil, errKey(key)
	}
	if n <= 0 {
		return io.NopCloser(strings.NewReader("")), nil
	}
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key),
		Range: aws.String(fmt.Sprintf("bytes=%d-%d", off, off+n-1))})
	if err != nil {
		if notFound(err) {
			return nil, ErrNotFound
		}
		return nil, fmt.Errorf("blob: get %s bytes %d+%d: %w", key, off, n, err)
	}
	// A store that ignores Range answers the whole object: skip to off and stop after n bytes.
	if out.ContentRange == nil {
		if _, err := io.CopyN(io.Discard, out.Body, off); err != nil {
			out.Body.Close()
			return nil, fmt.Errorf("blob: get %s: %w", key, err)
		}
	}
	return struct {
		io.Reader
		io.Closer
	}{io.LimitReader(out.Body, n), out.Body}, nil
}

// Delete implements Store.
func (s *S3) Delete(ctx context.Context, key string) error {
	if !ValidKey(key) {
		return errKey(key)
	}
	_, err := s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key)})
	if err != nil && !notFound(err) {
		return fmt.Errorf("blob: delete %s: %w", key, err)
	}
	return nil
}

// notFound tells a missing object from other failures: the typed NoSuchKey, or a bare 404 (some
// stores answer without an error code).
func notFound(err error) bool {
	var nsk *types.NoSuchKey
	if errors.As(err, &nsk) {
		return true
	}
	var nf *types.NotFound
	if errors.As(err, &nf) {
		return true
	}
	var re interface{ HTTPStatusCode() int }
	return errors.As(err, &re) && re.HTTPStatusCode() == 404
}
