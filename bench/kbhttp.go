package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/reelforge/reelforge/host/app"
	"github.com/reelforge/reelforge/host/config"
	"github.com/reelforge/reelforge/internal/textgen"
)

var (
	kbHTTPDocs = flag.Int("kb-http-docs", 1500, "documents (300 to 3,000 characters) sent through POST /api/knowledge/batch/text, "+
		"50 a call, to a real host over HTTP, per database (0: skip that part)")
	kbHTTPPort = flag.Int("kb-http-port", 0, "port of the host the HTTP ingest part starts (0: a free one)")
)

// kbHTTPBatch is how many documents one batch/text call carries in the HTTP ingest part: the
// issue's measured case (batch/text, 50 a call).
const kbHTTPBatch = 50

// kbHTTPResult is one database's figures of the HTTP ingest part.
type kbHTTPResult struct {
	driver      string
	docs, bytes int
	chunks      int
	wall, cpu   time.Duration
	server      serverMeter   // PostgreSQL's CPU over the calls and the indexer's work after them
	drain       time.Duration // how long the indexer went on after the last call
}

func (r kbHTTPResult) mbs() float64    { return float64(r.bytes) / 1e6 / r.wall.Seconds() }
func (r kbHTTPResult) cpuMBs() float64 { return float64(r.bytes) / 1e6 / r.cpu.Seconds() }

// benchKBHTTP measures the HTTP case: short documents made by shortDocs sent through
// POST /api/knowledge/batch/text, kbHTTPBatch a call, one call after the other, to a real host
// (host/app: the wiring `reelforge serve` runs, plugins off) listening on loopback, on SQLite and
// on PostgreSQL with pgvector in the same run. The host runs in this process, so `host CPU MB/s`
// includes the bench's HTTP client (its bodies are encoded before the clock starts). `server CPU
// MB/s` is PostgreSQL's backends' CPU over the calls and the background indexer's work after them
// (its duration is the last column).
func benchKBHTTP(ctx context.Context, o *options) error {
	if *kbHTTPDocs <= 0 {
		return nil
	}
	load, _ := os.ReadFile("/proc/loadavg")
	fmt.Printf("## Knowledge base over HTTP: batch/text, %d documents of 300 to 3,000 characters a call, a real host on loopback (load average %s)\n\n",
		kbHTTPBatch, strings.Join(strings.Fields(string(load))[:min(3, len(strings.Fields(string(load))))], " "))
	fmt.Println("| database | documents | chunks | MB | ingest MB/s | host CPU MB/s | server CPU MB/s | indexer after the last call s |")
	fmt.Println("|---|---:|---:|---:|---:|---:|---:|---:|")
	docs := shortDocs(rand.New(rand.NewPCG(5, 6)), *kbHTTPDocs)
	var results []kbHTTPResult
	dbs := []string{"sqlite"}
	if o.pgURL != "" {
		dbs = append(dbs, "postgres+pgvector")
	}
	for _, db := range dbs {
		r, err := kbHTTPIngest(ctx, o, db, docs)
		if err != nil {
			return fmt.Errorf("knowledge over HTTP, %s: %w", db, err)
		}
		results = append(results, r)
		drain := ""
		if r.driver != "sqlite" {
			drain = fmt.Sprintf("%.1f", r.drain.Seconds())
		}
		fmt.Printf("| %s | %d | %d | %.2f | %.2f | %.2f | %s | %s |\n", r.driver, r.docs, r.chunks, float64(r.bytes)/1e6, r.mbs(), r.cpuMBs(),
			r.server.mbs(r.bytes), drain)
	}
	fmt.Println()
	sq := results[0]
	fmt.Printf("Target: SQLite ≥ 3 MB/s: %s (%.2f).", metOrNot(sq.mbs() >= 3), sq.mbs())
	if len(results) > 1 {
		pg := results[1]
		fmt.Printf(" PostgreSQL+pgvector ≥ half of SQLite's figure of this run: %s (%.2f, %.0f%% of SQLite).",
			metOrNot(pg.mbs() >= sq.mbs()/2), pg.mbs(), 100*pg.mbs()/sq.mbs())
	}
	fmt.Print("\n\n")
	return nil
}

func metOrNot(ok bool) string {
	if ok {
		return "**met**"
	}
	return "**not met**"
}

// kbHTTPIngest starts a host on db, registers a user and sends docs through batch/text.
func kbHTTPIngest(ctx context.Context, o *options, db string, docs []string) (kbHTTPResult, error) {
	res := kbHTTPResult{driver: db}
	dir, err := os.MkdirTemp("", "bench-kbhttp-")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(dir)
	cfg := config.Defaults()
	cfg.DataDir, cfg.PluginsEnabled = dir, false
	cfg.RateLimitUser = 1 << 30 // measure the work, not the limiter's refusals
	cfg.RateLimitAuth = 1 << 30
	if cfg.Port, err = benchPort(); err != nil {
		return res, err
	}
	if db != "sqlite" {
		// A schema of its own, dropped afterwards; the extension stays in public.
		schema := fmt.Sprintf("bench_kbhttp_%d", time.Now().UnixNano())
		c, err := pgx.Connect(ctx, o.pgURL)
		if err != nil {
			return res, err
		}
		defer func() {
			_, _ = c.Exec(context.WithoutCancel(ctx), `DROP SCHEMA IF EXISTS `+pgx.Identifier{schema}.Sanitize()+` CASCADE`)
			c.Close(context.WithoutCancel(ctx))
		}()
		if _, err := c.Exec(ctx, `CREATE SCHEMA `+pgx.Identifier{schema}.Sanitize()); err != nil {
			return res, err
		}
		u, err := url.Parse(o.pgURL)
		if err != nil {
			return res, err
		}
		q := u.Query()
		q.Set("search_path", schema+",public")
		u.RawQuery = q.Encode()
		cfg.DatabaseURL = u.String()
	}
	h, err := app.New(ctx, &cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		return res, err
	}
	if db != "sqlite" && !h.Store.SupportsVectorSearch() {
		return res, errors.New("pgvector unavailable")
	}
	hctx, stop := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() { ran <- h.Run(hctx) }()
	defer func() {
		stop()
		<-ran
	}()
	base := fmt.Sprintf("http://127.0.0.1:%d", cfg.Port)
	if err := waitHealthy(base, ran); err != nil {
		return res, err
	}
	tok, err := register(base)
	if err != nil {
		return res, err
	}
	var bodies [][]byte
	for i := 0; i < len(docs); i += kbHTTPBatch {
		items := make([]map[string]string, 0, kbHTTPBatch)
		for _, d := range docs[i:min(len(docs), i+kbHTTPBatch)] {
			items = append(items, map[string]string{"text": d, "source_name": "bench-http", "visibility": "private"})
			res.bytes += len(d)
			res.docs++
		}
		b, err := json.Marshal(map[string]any{"items": items})
		if err != nil {
			return res, err
		}
		bodies = append(bodies, b)
	}
	client := &http.Client{Timeout: 5 * time.Minute}
	if db != "sqlite" {
		res.server.url = o.pgURL
	}
	res.server.begin(ctx)
	t0, c0 := time.Now(), processCPU()
	for _, b := range bodies {
		n, err := batchText(client, base, tok, b)
		if err != nil {
			return res, err
		}
		res.chunks += n
	}
	res.wall, res.cpu = time.Since(t0), processCPU()-c0
	if res.drain, err = waitIndexed(ctx, h.Store, h.Store.SupportsVectorSearch()); err != nil {
		return res, err
	}
	res.server.end(ctx)
	return res, nil
}

// batchText sends one batch/text call and returns its chunk count; any failed item is an error.
func batchText(c *http.Client, base, tok string, body []byte) (int, error) {
	req, err := http.NewRequest("POST", base+"/api/knowledge/batch/text", bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Content-Type", "application/json")
	res, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		return 0, err
	}
	var out struct {
		Data struct {
			ChunksCount int               `json:"chunks_count"`
			Failed      []json.RawMessage `json:"failed"`
		} `json:"data"`
	}
	if res.StatusCode != http.StatusOK || json.Unmarshal(raw, &out) != nil || len(out.Data.Failed) > 0 {
		return 0, fmt.Errorf("batch/text: status %d: %.300s", res.StatusCode, raw)
	}
	return out.Data.ChunksCount, nil
}

// benchPort is -kb-http-port, or a free loopback port.
func benchPort() (int, error) {
	if *kbHTTPPort > 0 {
		return *kbHTTPPort, nil
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// waitHealthy waits for GET /health to answer 200, or for the host to stop.
func waitHealthy(base string, ran <-chan error) error {
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-ran:
			return fmt.Errorf("host stopped: %v", err)
		default:
		}
		if res, err := http.Get(base + "/health"); err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return errors.New("host not healthy after 60 s")
}

// shortDocs makes n documents of 300 to 3,000 characters (uniform), from kbbench's Zipf
// vocabulary: sentences of 6 to 20 words, capitalised and ended with a full stop, in paragraphs
// of 2 to 6 sentences, the shape of notes, posts and short articles.
func shortDocs(r *rand.Rand, n int) []string {
	vocab := textgen.NewVocab(r)
	out := make([]string, n)
	var b strings.Builder
	for i := range out {
		want := 300 + r.IntN(2701)
		b.Reset()
		chars := 0
		for chars < want {
			sentences := 2 + r.IntN(5)
			for s := 0; s < sentences && chars < want; s++ {
				words := 6 + r.IntN(15)
				for w := 0; w < words; w++ {
					word := vocab.Word()
					if w == 0 {
						word = capitalise(word)
					} else {
						b.WriteByte(' ')
						chars++
					}
					b.WriteString(word)
					chars += utf8.RuneCountInString(word)
				}
				b.WriteString(". ")
				chars += 2
			}
			b.WriteString("\n\n")
			chars += 2
		}
		out[i] = trimRunes(strings.TrimSpace(b.String()), 3000)
	}
	return out
}

func capitalise(w string) string {
	r, size := utf8.DecodeRuneInString(w)
	return string(unicode.ToUpper(r)) + w[size:]
}

func trimRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n])
}
