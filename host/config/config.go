// Package config loads the host's configuration, once, from the environment (and an optional .env
// file, and *_FILE secrets). Defaults live in Defaults; every variable is listed in the README.
package config

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Config is the whole configuration of the host. It is read-only after Load.
type Config struct {
	Port        int
	DataDir     string
	DatabaseURL string // empty: embedded SQLite in DataDir
	// VectorSearch switches the pgvector path: "auto" (use it when the extension can be created)
	// or "off" (always the in-memory path). Env KB_VECTOR_SEARCH.
	VectorSearch string
	// The database's limits (issue 38): each call's deadline (DB_TIMEOUT_MS: statement, pool
	// acquire, SQLite busy wait), the longer one of migrations and the knowledge indexer
	// (DB_SLOW_TIMEOUT_MS), and PostgreSQL's pool: at most DB_POOL_MAX connections, DB_POOL_MIN
	// kept open, and an idle one closed after DB_POOL_IDLE_MS so an idle host gives them back.
	DBTimeout     time.Duration
	DBSlowTimeout time.Duration
	DBPoolMax     int
	DBPoolMin     int
	DBPoolIdle    time.Duration

	JWTSecret      string
	CallbackSecret string
	// FileURLTTL is how long the signed file URLs the API hands out stay valid (FILE_URL_TTL: a
	// duration such as 1h or 90m, or seconds); their key is derived from JWTSecret.
	FileURLTTL time.Duration

	LLMBaseURL     string
	LLMAPIKey      string
	EmbeddingModel string
	KBAskModel     string
	KBRerankOn     bool
	KBRerankModel  string
	KBMinScore     float64
	// KBVectorCacheMB is the memory budget, in MiB, of the decoded vectors the in-memory vector
	// path keeps between searches (KB_VECTOR_CACHE_MB); 0 keeps none.
	KBVectorCacheMB int

	RunnerURL         string
	ChatflowURL       string
	ChatflowKBID      string
	ChatflowAPIKey    string // CHATFLOW_API_KEY: Flowise's API key, sent as a Bearer token
	AutomationURL     string // AUTOMATION_WEBHOOK_URL: base for workflow triggering
	MusicAPIURL       string
	VideogenAPIURL    string
	SpeechAPIURL      string
	VideoparseAPIURL  string
	CallbackBaseURL   string
	PluginDir         string
	PluginsEnabled    bool // PLUGINS_ENABLED=false runs every workflow on the in-process node engine
	ManifestDir       string
	SchedulerMode     string // automation_managed or cron
	SchedulerInterval time.Duration

	// ContentFetchAllow lists hosts or CIDRs that links handed in by users (link previews, the
	// videoparse page fetch) may reach although they are loopback, private or link-local
	// (CONTENT_FETCH_ALLOW, comma-separated).
	ContentFetchAllow []string

	// S3Bucket, when set, keeps uploaded files in that bucket of an S3-compatible object store
	// instead of DATA_DIR (S3_BUCKET, S3_ENDPOINT, S3_REGION, S3_ACCESS_KEY_ID,
	// S3_SECRET_ACCESS_KEY, S3_USE_PATH_STYLE).
	S3Bucket          string
	S3Endpoint        string // empty: AWS S3 of S3Region
	S3Region          string
	S3AccessKeyID     string
	S3SecretAccessKey string
	S3UsePathStyle    bool

	EventWebhookURL     string
	WebhookSecret       string
	NotificationsOn     bool
	NotificationTimeout time.Duration
	BatchSize           int
	BatchInterval       time.Duration
	EnabledEvents       []string // empty: all

	BodyLimit       int // bytes of a JSON body
	UploadLimit     int // bytes of an upload
	RateLimitUser   int // requests a minute per user on /api
	RateLimitAuth   int // register/login a minute per address
	FreeRunsPerDay  int
	ShutdownTimeout time.Duration
	// HostID names this host in the leases it holds (HOST_ID); empty: generated once and kept in
	// DATA_DIR/host_id, so a restarted host knows its previous life's work.
	HostID string
	// Lease is how long work a host holds (a run executing, a job it renders, a document it
	// ingests, an event batch it delivers) stays its own without renewal (LEASE_MS): after a
	// crash, other hosts take it over this long after the last renewal.
	Lease time.Duration
	// WSConnectionsPerUser caps the WebSocket connections one user holds open on this host
	// (WS_MAX_CONNECTIONS_PER_USER); past it a new one is closed with code 1008 and the reason.
	WSConnectionsPerUser int
	MetricsToken         string // bearer token for GET /metrics; empty: only loopback callers
	// CORSAllowOrigins are the browser origins (scheme://host[:port]) allowed to call the API
	// with credentials (CORS_ALLOW_ORIGINS); empty: no CORS headers at all.
	CORSAllowOrigins []string
	Version          string
	LogFormat        string // json or text; empty: json unless on a terminal

	lookup func(string) (string, bool) // the environment LoadFrom read
}

// Getenv looks up an environment variable the way the configuration was read (the environment,
// then the .env file; NAME_FILE names a file holding it): the engine registry's settings refer to
// variables by name. A Config not made by LoadFrom reads the process environment.
func (c *Config) Getenv(name string) (string, bool) {
	r := reader{lookup: c.lookup}
	if r.lookup == nil {
		r.lookup = os.LookupEnv
	}
	v, ok := r.get(name)
	if r.err != nil {
		return "", false
	}
	return v, ok
}

// Defaults returns the configuration used when no variable is set.
func Defaults() Config {
	return Config{
		Port:                 3001,
		DataDir:              "./data",
		VectorSearch:         "auto",
		DBTimeout:            5 * time.Second,
		DBSlowTimeout:        30 * time.Minute,
		DBPoolMax:            0, // pgxpool's default: the larger of 4 and the CPUs
		DBPoolMin:            0,
		DBPoolIdle:           time.Minute,
		KBMinScore:           0.2,
		KBVectorCacheMB:      512, // kb.DefaultVectorCacheMB (config_test checks they agree)
		EmbeddingModel:       "",
		KBAskModel:           "gpt-4o-mini",
		KBRerankModel:        "gpt-4o-mini",
		ChatflowKBID:         "",
		PluginDir:            "./bin/plugins",
		PluginsEnabled:       true,
		ManifestDir:          "./manifests",
		S3Region:             "us-east-1",
		S3UsePathStyle:       true,
		SchedulerMode:        "automation_managed",
		SchedulerInterval:    15 * time.Minute,
		NotificationTimeout:  5 * time.Second,
		BatchSize:            10,
		BatchInterval:        5 * time.Second,
		BodyLimit:            1 << 20,
		UploadLimit:          50 << 20,
		RateLimitUser:        600,
		RateLimitAuth:        20,
		FreeRunsPerDay:       20,
		ShutdownTimeout:      15 * time.Second,
		Lease:                30 * time.Second,
		WSConnectionsPerUser: 16,
		FileURLTTL:           time.Hour,
		Version:              "0.1.0",
	}
}

// Load reads the environment (after an optional .env file in the working directory, whose values
// never override the real environment), applies defaults and validates.
func Load() (*Config, error) {
	return LoadFrom(envWithDotenv(".env"))
}

// LoadFrom builds a Config from a lookup function (os.LookupEnv in production, a map in tests).
func LoadFrom(lookup func(string) (string, bool)) (*Config, error) {
	c := Defaults()
	c.lookup = lookup
	r := reader{lookup: lookup}
	r.int("PORT", &c.Port)
	r.str("DATA_DIR", &c.DataDir)
	r.str("DATABASE_URL", &c.DatabaseURL)
	r.str("KB_VECTOR_SEARCH", &c.VectorSearch)
	r.millis("DB_TIMEOUT_MS", &c.DBTimeout)
	r.millis("DB_SLOW_TIMEOUT_MS", &c.DBSlowTimeout)
	r.int("DB_POOL_MAX", &c.DBPoolMax)
	r.int("DB_POOL_MIN", &c.DBPoolMin)
	r.millis("DB_POOL_IDLE_MS", &c.DBPoolIdle)
	r.str("JWT_SECRET", &c.JWTSecret)
	r.str("CALLBACK_SECRET", &c.CallbackSecret)
	r.duration("FILE_URL_TTL", &c.FileURLTTL)
	r.str("LLM_BASE_URL", &c.LLMBaseURL)
	r.str("LLM_API_KEY", &c.LLMAPIKey)
	r.str("EMBEDDING_MODEL", &c.EmbeddingModel)
	r.str("KB_ASK_MODEL", &c.KBAskModel)
	r.bool("KB_RERANK_ENABLED", &c.KBRerankOn)
	r.str("KB_RERANK_MODEL", &c.KBRerankModel)
	r.float("KB_MIN_SCORE", &c.KBMinScore)
	r.int("KB_VECTOR_CACHE_MB", &c.KBVectorCacheMB)
	r.str("RUNNER_URL", &c.RunnerURL)
	r.str("CHATFLOW_URL", &c.ChatflowURL)
	r.str("CHATFLOW_KB_ID", &c.ChatflowKBID)
	r.str("CHATFLOW_API_KEY", &c.ChatflowAPIKey)
	r.str("AUTOMATION_WEBHOOK_URL", &c.AutomationURL)
	r.str("MUSIC_API_URL", &c.MusicAPIURL)
	r.str("VIDEOGEN_API_URL", &c.VideogenAPIURL)
	r.str("SPEECH_API_URL", &c.SpeechAPIURL)
	r.str("VIDEOPARSE_API_URL", &c.VideoparseAPIURL)
	r.list("CONTENT_FETCH_ALLOW", &c.ContentFetchAllow)
	r.str("S3_BUCKET", &c.S3Bucket)
	r.str("S3_ENDPOINT", &c.S3Endpoint)
	r.str("S3_REGION", &c.S3Region)
	r.str("S3_ACCESS_KEY_ID", &c.S3AccessKeyID)
	r.str("S3_SECRET_ACCESS_KEY", &c.S3SecretAccessKey)
	r.bool("S3_USE_PATH_STYLE", &c.S3UsePathStyle)
	r.str("CALLBACK_BASE_URL", &c.CallbackBaseURL)
	r.str("PLUGIN_DIR", &c.PluginDir)
	r.bool("PLUGINS_ENABLED", &c.PluginsEnabled)
	r.str("MANIFEST_DIR", &c.ManifestDir)
	r.str("SCHEDULER_MODE", &c.SchedulerMode)
	r.millis("SCHEDULER_INTERVAL_MS", &c.SchedulerInterval)
	r.str("AUTOMATION_EVENT_WEBHOOK_URL", &c.EventWebhookURL)
	r.str("AUTOMATION_WEBHOOK_SECRET", &c.WebhookSecret)
	r.bool("AUTOMATION_ENABLE_NOTIFICATIONS", &c.NotificationsOn)
	r.millis("AUTOMATION_NOTIFICATION_TIMEOUT", &c.NotificationTimeout)
	r.int("AUTOMATION_BATCH_SIZE", &c.BatchSize)
	r.millis("AUTOMATION_BATCH_INTERVAL", &c.BatchInterval)
	r.list("AUTOMATION_ENABLED_EVENTS", &c.EnabledEvents)
	r.int("BODY_LIMIT_BYTES", &c.BodyLimit)
	r.int("UPLOAD_LIMIT_BYTES", &c.UploadLimit)
	r.int("RATE_LIMIT_PER_MINUTE", &c.RateLimitUser)
	r.int("AUTH_RATE_LIMIT_PER_MINUTE", &c.RateLimitAuth)
	r.int("FREE_RUNS_PER_DAY", &c.FreeRunsPerDay)
	r.millis("SHUTDOWN_TIMEOUT_MS", &c.ShutdownTimeout)
	r.str("HOST_ID", &c.HostID)
	r.millis("LEASE_MS", &c.Lease)
	r.int("WS_MAX_CONNECTIONS_PER_USER", &c.WSConnectionsPerUser)
	r.str("METRICS_TOKEN", &c.MetricsToken)
	r.list("CORS_ALLOW_ORIGINS", &c.CORSAllowOrigins)
	r.str("LOG_FORMAT", &c.LogFormat)
	if r.err != nil {
		return nil, r.err
	}
	if c.CallbackBaseURL == "" {
		c.CallbackBaseURL = fmt.Sprintf("http://127.0.0.1:%d", c.Port)
	}
	c.CallbackBaseURL = strings.TrimRight(c.CallbackBaseURL, "/")
	return &c, c.Validate()
}

// Validate checks values that would make the host misbehave.
func (c *Config) Validate() error {
	var errs []error
	if c.Port < 1 || c.Port > 65535 {
		errs = append(errs, fmt.Errorf("PORT: %d is not a port", c.Port))
	}
	if c.SchedulerMode != "automation_managed" && c.SchedulerMode != "cron" {
		errs = append(errs, fmt.Errorf("SCHEDULER_MODE: want automation_managed or cron, got %q", c.SchedulerMode))
	}
	if c.SchedulerInterval < time.Second {
		// The built-in timer ticks at this interval in cron mode; zero would panic the ticker and a
		// few milliseconds would spin the scheduler.
		errs = append(errs, fmt.Errorf("SCHEDULER_INTERVAL_MS: must be at least 1000"))
	}
	if c.LogFormat != "" && c.LogFormat != "json" && c.LogFormat != "text" {
		errs = append(errs, fmt.Errorf("LOG_FORMAT: want json or text, got %q", c.LogFormat))
	}
	if c.VectorSearch != "auto" && c.VectorSearch != "off" {
		errs = append(errs, fmt.Errorf("KB_VECTOR_SEARCH: want auto or off, got %q", c.VectorSearch))
	}
	if c.KBVectorCacheMB < 0 {
		errs = append(errs, fmt.Errorf("KB_VECTOR_CACHE_MB: must be 0 (no cache) or more"))
	}
	if c.BatchSize < 1 {
		errs = append(errs, fmt.Errorf("AUTOMATION_BATCH_SIZE: must be at least 1"))
	}
	if c.BodyLimit < 1024 || c.UploadLimit < 1024 {
		errs = append(errs, fmt.Errorf("BODY_LIMIT_BYTES and UPLOAD_LIMIT_BYTES: must be at least 1024"))
	}
	if c.WSConnectionsPerUser < 1 {
		errs = append(errs, fmt.Errorf("WS_MAX_CONNECTIONS_PER_USER: must be at least 1"))
	}
	if c.DBTimeout < 100*time.Millisecond || c.DBSlowTimeout < c.DBTimeout {
		errs = append(errs, fmt.Errorf("DB_TIMEOUT_MS: must be at least 100, and DB_SLOW_TIMEOUT_MS at least DB_TIMEOUT_MS"))
	}
	if c.DBPoolMax == 1 || c.DBPoolMax < 0 || c.DBPoolMin < 0 || (c.DBPoolMax > 0 && c.DBPoolMin > c.DBPoolMax) {
		errs = append(errs, fmt.Errorf("DB_POOL_MAX: must be 0 (the default size) or at least 2 (a host holds one connection for LISTEN); DB_POOL_MIN from 0 to DB_POOL_MAX"))
	}
	if c.DBPoolIdle < time.Second {
		errs = append(errs, fmt.Errorf("DB_POOL_IDLE_MS: must be at least 1000"))
	}
	if c.Lease < 3*time.Second {
		errs = append(errs, fmt.Errorf("LEASE_MS: must be at least 3000 (leases are renewed every third of it)"))
	}
	if c.HostID != "" && strings.ContainsAny(c.HostID, "/ \t\n") {
		errs = append(errs, fmt.Errorf("HOST_ID: %q must not hold '/' or spaces", c.HostID))
	}
	for _, o := range c.CORSAllowOrigins {
		if u, err := url.Parse(o); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
			strings.Contains(u.Host, "*") || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil {
			errs = append(errs, fmt.Errorf("CORS_ALLOW_ORIGINS: %q is not an origin (scheme://host[:port]; no wildcard, since credentials are allowed)", o))
		}
	}
	if c.FileURLTTL < 10*time.Second || c.FileURLTTL > 7*24*time.Hour {
		errs = append(errs, fmt.Errorf("FILE_URL_TTL: %v is outside 10s to 168h", c.FileURLTTL))
	}
	if c.RateLimitUser < 1 || c.RateLimitAuth < 1 {
		errs = append(errs, fmt.Errorf("rate limits must be at least 1 a minute"))
	}
	// An S3 setting without a bucket would silently leave uploads in DATA_DIR: say so instead.
	if c.S3Bucket == "" && (c.S3Endpoint != "" || c.S3AccessKeyID != "" || c.S3SecretAccessKey != "") {
		errs = append(errs, fmt.Errorf("S3_BUCKET: required when S3_ENDPOINT or S3 credentials are set"))
	}
	if c.S3Bucket != "" && (c.S3AccessKeyID == "" || c.S3SecretAccessKey == "") {
		errs = append(errs, fmt.Errorf("S3_ACCESS_KEY_ID and S3_SECRET_ACCESS_KEY: required with S3_BUCKET"))
	}
	if c.S3Endpoint != "" {
		if u, err := url.Parse(c.S3Endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("S3_ENDPOINT: %q is not an http(s) URL", c.S3Endpoint))
		}
	}
	return errors.Join(errs...)
}

// EnsureJWTSecret fills JWTSecret when unset: a random secret generated on first start and kept in
// the data directory with mode 0600, reused on later starts.
func (c *Config) EnsureJWTSecret() error {
	return c.ensureSecret(&c.JWTSecret, "jwt_secret", "jwt secret")
}

// EnsureCallbackSecret fills CallbackSecret like the JWT secret when unset.
func (c *Config) EnsureCallbackSecret() error {
	return c.ensureSecret(&c.CallbackSecret, "callback_secret", "callback secret")
}

// ensureSecret fills *secret when it is empty: from the data directory's file name when that holds
// one (32 characters or more), else with 32 random bytes in hex, written there (mode 0600) for the
// next start; what names it in errors.
func (c *Config) ensureSecret(secret *string, name, what string) error {
	if *secret != "" {
		return nil
	}
	if err := os.MkdirAll(c.DataDir, 0o700); err != nil {
		return fmt.Errorf("config: data dir: %w", err)
	}
	path := filepath.Join(c.DataDir, name)
	if b, err := os.ReadFile(path); err == nil && len(strings.TrimSpace(string(b))) >= 32 {
		*secret = strings.TrimSpace(string(b))
		return nil
	}
	buf := make([]byte, 32)
	if _, err := rand.Read(buf); err != nil {
		return fmt.Errorf("config: generate %s: %w", what, err)
	}
	s := hex.EncodeToString(buf)
	if err := os.WriteFile(path, []byte(s+"\n"), 0o600); err != nil {
		return fmt.Errorf("config: write %s: %w", what, err)
	}
	*secret = s
	return nil
}

type reader struct {
	lookup func(string) (string, bool)
	err    error
}

// get reads NAME, or the contents of the file named by NAME_FILE (for secrets).
func (r *reader) get(name string) (string, bool) {
	if v, ok := r.lookup(name); ok {
		return strings.TrimSpace(v), true
	}
	if p, ok := r.lookup(name + "_FILE"); ok && p != "" {
		b, err := os.ReadFile(p)
		if err != nil {
			r.err = errors.Join(r.err, fmt.Errorf("%s_FILE: %w", name, err))
			return "", false
		}
		return strings.TrimSpace(string(b)), true
	}
	return "", false
}

func (r *reader) str(name string, dst *string) {
	if v, ok := r.get(name); ok {
		*dst = v
	}
}

func (r *reader) int(name string, dst *int) {
	if v, ok := r.get(name); ok && v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			r.err = errors.Join(r.err, fmt.Errorf("%s: %q is not a whole number", name, v))
			return
		}
		*dst = n
	}
}

func (r *reader) float(name string, dst *float64) {
	if v, ok := r.get(name); ok && v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			r.err = errors.Join(r.err, fmt.Errorf("%s: %q is not a number", name, v))
			return
		}
		*dst = f
	}
}

func (r *reader) bool(name string, dst *bool) {
	if v, ok := r.get(name); ok && v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			r.err = errors.Join(r.err, fmt.Errorf("%s: %q is not true or false", name, v))
			return
		}
		*dst = b
	}
}

func (r *reader) millis(name string, dst *time.Duration) {
	var n int
	set := false
	if v, ok := r.get(name); ok && v != "" {
		set = true
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 0 {
			r.err = errors.Join(r.err, fmt.Errorf("%s: %q is not a number of milliseconds", name, v))
			return
		}
	}
	if set {
		*dst = time.Duration(n) * time.Millisecond
	}
}

// duration reads a Go duration ("1h", "90m") or a whole number of seconds.
func (r *reader) duration(name string, dst *time.Duration) {
	v, ok := r.get(name)
	if !ok || v == "" {
		return
	}
	if n, err := strconv.Atoi(v); err == nil && n >= 0 {
		*dst = time.Duration(n) * time.Second
		return
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		r.err = errors.Join(r.err, fmt.Errorf("%s: %q is not a duration (e.g. 1h, 90m) or a number of seconds", name, v))
		return
	}
	*dst = d
}

func (r *reader) list(name string, dst *[]string) {
	if v, ok := r.get(name); ok && v != "" {
		var out []string
		for _, s := range strings.Split(v, ",") {
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
		*dst = out
	}
}

// envWithDotenv looks a name up in the environment, then in the .env file at path.
func envWithDotenv(path string) func(string) (string, bool) {
	file := map[string]string{}
	if f, err := os.Open(path); err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			line := strings.TrimSpace(sc.Text())
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			k, v, ok := strings.Cut(strings.TrimPrefix(line, "export "), "=")
			if !ok {
				continue
			}
			file[strings.TrimSpace(k)] = strings.Trim(strings.TrimSpace(v), `"'`)
		}
	}
	return func(name string) (string, bool) {
		if v, ok := os.LookupEnv(name); ok {
			return v, true
		}
		v, ok := file[name]
		return v, ok
	}
}
