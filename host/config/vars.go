package config

import (
	"fmt"
	"strings"
)

//go:generate go run ./gendoc ../../README.md

// Var documents one environment variable: the README's configuration table is generated from
// Vars (go generate ./host/config), and config's tests fail when Vars, LoadFrom and the README
// drift apart. A new variable is read in LoadFrom and listed here.
type Var struct {
	Name    string // one name, or several sharing a line ("A, B")
	Default string // the literal default (tested: setting it changes nothing); empty with Shown
	Shown   string // the default in words, when it is not a literal ("generated"); both empty: "empty"
	ReadBy  string // set when another package reads it, not LoadFrom
	Meaning string // Markdown
}

// Vars lists every variable the host reads, in the README's order.
var Vars = []Var{
	{Name: "PORT", Default: "3001", Meaning: "HTTP port"},
	{Name: "DATA_DIR", Default: "./data", Meaning: "SQLite file, generated secrets, generated files, and uploaded files unless `S3_BUCKET` is set"},
	{Name: "DATABASE_URL", Meaning: "PostgreSQL URL; empty means embedded SQLite in `DATA_DIR`"},
	{Name: "DB_TIMEOUT_MS", Default: "5000", Meaning: "deadline of each database call (pool acquire, connect, statement; SQLite's busy wait): past it the request answers 503 `RESOURCE_EXHAUSTED` with `Retry-After`"},
	{Name: "DB_SLOW_TIMEOUT_MS", Default: "1800000", Meaning: "deadline of each call of the migrations at start"},
	{Name: "DB_POOL_MAX", Default: "0", Meaning: "size of a host's PostgreSQL pool (0: the URL's `pool_max_conns`, else the larger of 4 and the CPUs); a host holds up to `DB_POOL_MAX` + 2 connections (its LISTEN and the leader's lock are apart; the job queue polls), so keep hosts × (`DB_POOL_MAX` + 2) + your tools under the server's `max_connections` (docs/operations.md, Connections)"},
	{Name: "DB_POOL_MIN", Default: "0", Meaning: "PostgreSQL connections a host keeps open when idle"},
	{Name: "DB_POOL_IDLE_MS", Default: "60000", Meaning: "the pool closes its idle connections above `DB_POOL_MIN` and above the most it had in use at once over this long: an idle host keeps one or two (its polling loops take turns on them) besides its listener and the leader's lock"},
	{Name: "KB_VECTOR_SEARCH", Default: "auto", Meaning: "`auto`: use pgvector when it can be created; `off`: always the in-memory vector path"},
	{Name: "JWT_SECRET", Shown: "generated", Meaning: "HS256 secret of access tokens (generated into `DATA_DIR/jwt_secret`, 0600)"},
	{Name: "FILE_URL_TTL", Default: "1h", Meaning: "lifetime of signed file URLs (a duration or seconds, 10 s to 168 h); their key is derived from `JWT_SECRET`"},
	{Name: "CALLBACK_SECRET", Shown: "generated", Meaning: "HMAC secret of the inbound callbacks (`X-Signature: sha256=...`)"},
	{Name: "CALLBACK_BASE_URL", Shown: "`http://127.0.0.1:$PORT`", Meaning: "address external executors call back"},
	{Name: "LLM_BASE_URL", Meaning: "OpenAI-compatible API base (hosted, Ollama, vLLM); empty: local embedder and extractive answers"},
	{Name: "LLM_API_KEY", Meaning: "its key"},
	{Name: "EMBEDDING_MODEL", Meaning: "embedding model at `LLM_BASE_URL`; empty: the local 1536-dimension embedder"},
	{Name: "KB_ASK_MODEL", Default: "gpt-4o-mini", Meaning: "model of `/api/knowledge/ask` (when `LLM_BASE_URL` is set)"},
	{Name: "KB_RERANK_ENABLED", Default: "false", Meaning: "reorder hits with a language model"},
	{Name: "KB_RERANK_MODEL", Default: "gpt-4o-mini", Meaning: "the reranking model"},
	{Name: "KB_MIN_SCORE", Default: "0.2", Meaning: "vector floor of the hits that share no query word: such a hit needs a cosine of at least this, and never less than 0.4 (below it the local embedder's hash collisions match noise); hits that share a query word are kept whatever their score"},
	{Name: "KB_VECTOR_CACHE_MB", Default: "512", Meaning: "memory budget (MiB) of the decoded vectors the in-memory vector path (SQLite, PostgreSQL without pgvector) keeps between searches, least recently used evicted first; about 6 KB a chunk with the local embedder, so 512 holds about 85,000 chunks; a corpus beyond it is searched correctly but loads what the cache lacks from the database on every search; `0`: no cache. Size and counts in `/metrics` (`reelforge_knowledge_vector_cache_*`)"},
	{Name: "RUNNER_URL", Meaning: "agent graph runner (`POST {RUNNER_URL}/run`)"},
	{Name: "RUNNER_PROTOCOL", Default: "reelforge", ReadBy: "the graph engine's settings (manifests/engines/graph.yaml)", Meaning: "`langgraph`: `RUNNER_URL` is a stock LangGraph server (`RUNNER_API_KEY` its key); see docs/langgraph.md"},
	{Name: "AUTOMATION_WEBHOOK_URL", Meaning: "automation tool's webhook base (`POST {url}/<webhook_path>`)"},
	{Name: "CHATFLOW_URL", Meaning: "chatflow tool: Flowise's address (`http://host:3000`; its API under `/api/v1` is found by its ping) or an API base with a path (`http://host:3000/api/v1`, or any tool serving `POST {base}/prediction/<id>`)"},
	{Name: "CHATFLOW_KB_ID", Meaning: "chatflow id (Flowise's UUID) of the knowledge chatflow: `kb_chat` runs and `/api/ai/chat` with `chatflowType: kb`"},
	{Name: "CHATFLOW_API_KEY", Meaning: "sent as `Authorization: Bearer <key>` to a flow that requires a Flowise API key"},
	{Name: "MUSIC_API_URL, VIDEOGEN_API_URL, SPEECH_API_URL, VIDEOPARSE_API_URL", Meaning: "external generators; empty: the generators plugin's local tools where present (espeak-ng, ffmpeg, ffprobe)"},
	{Name: "PLUGIN_DIR", Default: "./bin/plugins", Meaning: "where engine plugin binaries are (the `plugin` of each `MANIFEST_DIR/engines/<name>.yaml`, default `<name>-plugin`)"},
	{Name: "PLUGINS_ENABLED", Default: "true", Meaning: "`false` runs every workflow on the in-process node engine (generator jobs then fail: they run only in the generators plugin)"},
	{Name: "MANIFEST_DIR", Default: "./manifests", Meaning: "workflow manifests, and the engine registry in its `engines/` folder"},
	{Name: "SCHEDULER_MODE", Default: "automation_managed", Meaning: "`automation_managed` (the automation tool calls the scheduler API) or `cron` (built-in timer)"},
	{Name: "SCHEDULER_INTERVAL_MS", Default: "900000", Meaning: "tick interval of the built-in timer (at least 1000)"},
	{Name: "AUTOMATION_EVENT_WEBHOOK_URL", Meaning: "receiver of outbound events"},
	{Name: "AUTOMATION_WEBHOOK_SECRET", Meaning: "HMAC secret of outbound events (`X-Webhook-Signature`)"},
	{Name: "AUTOMATION_ENABLE_NOTIFICATIONS", Default: "false", Meaning: "`true` turns event delivery on"},
	{Name: "AUTOMATION_NOTIFICATION_TIMEOUT", Default: "5000", Meaning: "delivery timeout, ms"},
	{Name: "AUTOMATION_BATCH_SIZE", Default: "10", Meaning: "events per delivery batch"},
	{Name: "AUTOMATION_BATCH_INTERVAL", Default: "5000", Meaning: "ms between batches"},
	{Name: "AUTOMATION_ENABLED_EVENTS", Shown: "empty (all)", Meaning: "comma-separated event names to deliver (`enabledEvents`)"},
	{Name: "CONTENT_FETCH_ALLOW", Meaning: "hosts or CIDRs that links handed in by users may reach although they are loopback, private or link-local (the SSRF guard of the link preview of collect/parse-link and of the local videoparse page fetch)"},
	{Name: "S3_BUCKET", Meaning: "keep uploaded files (materials, inspiration media) and the files runs make in this bucket of an S3-compatible object store instead of `DATA_DIR/assets`"},
	{Name: "S3_ENDPOINT", Shown: "empty (AWS S3)", Meaning: "the store's base URL, e.g. `http://minio:9000`"},
	{Name: "S3_REGION", Default: "us-east-1", Meaning: "the region requests are signed for"},
	{Name: "S3_ACCESS_KEY_ID, S3_SECRET_ACCESS_KEY", Meaning: "the store's credentials, required with `S3_BUCKET` (only these are used: no AWS profile or instance role)"},
	{Name: "S3_USE_PATH_STYLE", Default: "true", Meaning: "address the bucket as `<endpoint>/<bucket>/<key>` (MinIO and most self-hosted stores); `false`: as a host name `<bucket>.<endpoint>`"},
	{Name: "BODY_LIMIT_BYTES", Default: "1048576", Meaning: "body limit of every route but the uploads, whatever the `Content-Type` (413 over)"},
	{Name: "UPLOAD_LIMIT_BYTES", Default: "52428800", Meaning: "file limit of the three upload routes (multipart only; 413 over)"},
	{Name: "RATE_LIMIT_PER_MINUTE", Default: "600", Meaning: "requests a minute per user on `/api` (429 + Retry-After over)"},
	{Name: "AUTH_RATE_LIMIT_PER_MINUTE", Default: "20", Meaning: "register/login/refresh a minute per address"},
	{Name: "FREE_RUNS_PER_DAY", Default: "20", Meaning: "workflow runs a day for `free_user` (429 QUOTA_EXCEEDED over)"},
	{Name: "SHUTDOWN_TIMEOUT_MS", Default: "15000", Meaning: "graceful shutdown: time given to requests in flight"},
	{Name: "LEASE_MS", Default: "30000", Meaning: "lease on work a host holds (runs, jobs it renders, ingests, event batches), renewed every third of it; after a crash other hosts take the work over this long after the last renewal (at least 3000)"},
	{Name: "HOST_ID", Shown: "generated", Meaning: "this host's name in its leases; generated once into `DATA_DIR/host_id`, so a restarted host takes back its previous life's work at once (give each host of a shared database its own `DATA_DIR` or `HOST_ID`)"},
	{Name: "WS_MAX_CONNECTIONS_PER_USER", Default: "16", Meaning: "WebSocket connections one user may hold open on a host; the next is closed with code 1008 and the reason"},
	{Name: "METRICS_TOKEN", Meaning: "bearer token of `GET /metrics`; empty: loopback callers only"},
	{Name: "CORS_ALLOW_ORIGINS", Meaning: "comma-separated browser origins (`https://app.example.com`, no wildcard) allowed to call the API with credentials; preflights are answered without a token and cached 600 s; empty: no CORS headers"},
	{Name: "LOG_FORMAT", Shown: "JSON (text on a terminal)", Meaning: "`json` or `text`"},
	{Name: "GOGC", Shown: "`400` when unset", ReadBy: "host/app (reelforge serve)", Meaning: "Go's collector pace; `reelforge serve` sets 400 (fewer collections, a third more small GETs a second) unless this is set"},
	{Name: "GOMEMLIMIT", Shown: "half the memory when unset", ReadBy: "host/app (reelforge serve)", Meaning: "Go's soft memory limit; `reelforge serve` sets half of the machine's or the cgroup's memory unless this is set"},
}

// Table is Vars as the README's Markdown table.
func Table() string {
	var b strings.Builder
	b.WriteString("| variable | default | meaning |\n|---|---|---|\n")
	for _, v := range Vars {
		names := strings.Split(v.Name, ", ")
		for i, n := range names {
			names[i] = "`" + n + "`"
		}
		def := v.Shown
		switch {
		case v.Default != "":
			def = "`" + v.Default + "`"
		case def == "":
			def = "empty"
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", strings.Join(names, ", "), def, v.Meaning)
	}
	return b.String()
}

// Table's place in the README: between these two lines, which go generate rewrites.
const (
	TableBegin = "<!-- config table: generated from host/config/vars.go by go generate ./host/config -->"
	TableEnd   = "<!-- end of the config table -->"
)

// Splice returns doc with the text between TableBegin and TableEnd replaced by Table.
func Splice(doc string) (string, error) {
	before, rest, ok := strings.Cut(doc, TableBegin+"\n")
	if !ok {
		return "", fmt.Errorf("no line %q", TableBegin)
	}
	_, after, ok := strings.Cut(rest, TableEnd)
	if !ok {
		return "", fmt.Errorf("no line %q after the table's start", TableEnd)
	}
	return before + TableBegin + "\n" + Table() + TableEnd + after, nil
}
