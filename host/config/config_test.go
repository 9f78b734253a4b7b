package config

import (
	"strings"
	"testing"
	"time"

	"github.com/reelforge/reelforge/host/kb"
)

func lookup(env map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := env[k]; return v, ok }
}

func TestS3Settings(t *testing.T) {
	t.Parallel()
	c, err := LoadFrom(lookup(nil))
	if err != nil || c.S3Bucket != "" || c.S3Region != "us-east-1" || !c.S3UsePathStyle {
		t.Fatalf("defaults = %+v, %v; want no bucket, us-east-1, path style", c, err)
	}
	c, err = LoadFrom(lookup(map[string]string{"S3_BUCKET": "media", "S3_ENDPOINT": "http://minio:9000", "S3_REGION": "eu-west-1",
		"S3_ACCESS_KEY_ID": "k", "S3_SECRET_ACCESS_KEY": "s", "S3_USE_PATH_STYLE": "false"}))
	if err != nil || c.S3Bucket != "media" || c.S3Endpoint != "http://minio:9000" || c.S3Region != "eu-west-1" ||
		c.S3AccessKeyID != "k" || c.S3SecretAccessKey != "s" || c.S3UsePathStyle {
		t.Errorf("S3 settings = %+v, %v", c, err)
	}
	bad := map[string]struct {
		env  map[string]string
		want string
	}{
		"endpoint without bucket":    {map[string]string{"S3_ENDPOINT": "http://minio:9000"}, "S3_BUCKET"},
		"bucket without credentials": {map[string]string{"S3_BUCKET": "media", "S3_ACCESS_KEY_ID": "k"}, "S3_SECRET_ACCESS_KEY"},
		"endpoint not a URL":         {map[string]string{"S3_BUCKET": "m", "S3_ACCESS_KEY_ID": "k", "S3_SECRET_ACCESS_KEY": "s", "S3_ENDPOINT": "minio:9000"}, "S3_ENDPOINT"},
		"path style not a bool":      {map[string]string{"S3_USE_PATH_STYLE": "sometimes"}, "S3_USE_PATH_STYLE"},
	}
	for name, tc := range bad {
		if _, err := LoadFrom(lookup(tc.env)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: LoadFrom = %v, want an error naming %s", name, err, tc.want)
		}
	}
}

func TestCORSAllowOrigins(t *testing.T) {
	t.Parallel()
	c, err := LoadFrom(lookup(map[string]string{"CORS_ALLOW_ORIGINS": "https://app.example.com, http://localhost:5173"}))
	if err != nil || len(c.CORSAllowOrigins) != 2 || c.CORSAllowOrigins[1] != "http://localhost:5173" {
		t.Fatalf("CORS_ALLOW_ORIGINS = %q, %v", c.CORSAllowOrigins, err)
	}
	if c, err := LoadFrom(lookup(nil)); err != nil || len(c.CORSAllowOrigins) != 0 {
		t.Errorf("default CORS_ALLOW_ORIGINS = %q, %v; want none", c.CORSAllowOrigins, err)
	}
	for _, bad := range []string{"*", "https://*.example.com", "app.example.com", "https://app.example.com/path", "ftp://x"} {
		if _, err := LoadFrom(lookup(map[string]string{"CORS_ALLOW_ORIGINS": bad})); err == nil || !strings.Contains(err.Error(), "CORS_ALLOW_ORIGINS") {
			t.Errorf("CORS_ALLOW_ORIGINS=%q: LoadFrom = %v, want an error naming it", bad, err)
		}
	}
}

// TestVectorCacheSetting: KB_VECTOR_CACHE_MB defaults to the knowledge base's own default, takes
// 0 (no cache) and more, and refuses a negative budget.
func TestVectorCacheSetting(t *testing.T) {
	t.Parallel()
	if got := Defaults().KBVectorCacheMB; got != kb.DefaultVectorCacheMB {
		t.Errorf("default KB_VECTOR_CACHE_MB = %d, kb.DefaultVectorCacheMB = %d: one of them moved", got, kb.DefaultVectorCacheMB)
	}
	for _, v := range []string{"0", "64"} {
		if c, err := LoadFrom(lookup(map[string]string{"KB_VECTOR_CACHE_MB": v})); err != nil || c.KBVectorCacheMB != map[string]int{"0": 0, "64": 64}[v] {
			t.Errorf("KB_VECTOR_CACHE_MB=%s: %v, %v", v, c, err)
		}
	}
	if _, err := LoadFrom(lookup(map[string]string{"KB_VECTOR_CACHE_MB": "-1"})); err == nil || !strings.Contains(err.Error(), "KB_VECTOR_CACHE_MB") {
		t.Errorf("KB_VECTOR_CACHE_MB=-1: err = %v, want one naming it", err)
	}
}

func TestFileURLTTL(t *testing.T) {
	t.Parallel()
	if c, err := LoadFrom(lookup(nil)); err != nil || c.FileURLTTL != time.Hour {
		t.Fatalf("default FILE_URL_TTL = %v, %v; want 1h", c.FileURLTTL, err)
	}
	for v, want := range map[string]time.Duration{"90m": 90 * time.Minute, "600": 10 * time.Minute, "24h": 24 * time.Hour} {
		if c, err := LoadFrom(lookup(map[string]string{"FILE_URL_TTL": v})); err != nil || c.FileURLTTL != want {
			t.Errorf("FILE_URL_TTL=%s: %v, %v; want %v", v, c.FileURLTTL, err, want)
		}
	}
	for _, bad := range []string{"soon", "-1h", "5s", "200h"} {
		if _, err := LoadFrom(lookup(map[string]string{"FILE_URL_TTL": bad})); err == nil || !strings.Contains(err.Error(), "FILE_URL_TTL") {
			t.Errorf("FILE_URL_TTL=%s: LoadFrom = %v, want an error naming it", bad, err)
		}
	}
}

func TestLogFormat(t *testing.T) {
	t.Parallel()
	for _, v := range []string{"", "json", "text"} {
		if c, err := LoadFrom(lookup(map[string]string{"LOG_FORMAT": v})); err != nil || c.LogFormat != v {
			t.Errorf("LOG_FORMAT=%q: %v, %v", v, c.LogFormat, err)
		}
	}
	if _, err := LoadFrom(lookup(map[string]string{"LOG_FORMAT": "xml"})); err == nil || !strings.Contains(err.Error(), "LOG_FORMAT") {
		t.Errorf("LOG_FORMAT=xml: err = %v, want one naming it", err)
	}
}

func TestSchedulerInterval(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{"0", "999"} {
		for _, mode := range []string{"cron", "automation_managed"} {
			_, err := LoadFrom(lookup(map[string]string{"SCHEDULER_MODE": mode, "SCHEDULER_INTERVAL_MS": bad}))
			if err == nil || !strings.Contains(err.Error(), "SCHEDULER_INTERVAL_MS") {
				t.Errorf("%s with SCHEDULER_INTERVAL_MS=%s: err = %v, want one naming it", mode, bad, err)
			}
		}
	}
	if c, err := LoadFrom(lookup(map[string]string{"SCHEDULER_MODE": "cron", "SCHEDULER_INTERVAL_MS": "1000"})); err != nil || c.SchedulerInterval != time.Second {
		t.Errorf("SCHEDULER_INTERVAL_MS=1000: %v, %v", c.SchedulerInterval, err)
	}
}
