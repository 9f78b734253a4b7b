// Package generators executes the generator jobs of runs: music, videogen, speech and videoparse.
//
// The package runs in the generators plugin (cmd/generators-plugin), never in the host: the host
// hands each generator job to the plugin's Engine (a Run of engine.JobWorkflow), which does it with
// its executor's Execute and answers when it is done. Execute submits a job by the generator protocol
// of DESIGN.md (POST {url} with {job_id, type, payload, callback_url}, a 2xx answer, later a signed
// ai-callback) when a URL is configured for the job's type, and otherwise does real work on this
// machine, its tools being children of the plugin that die with it:
//
//   - speech: espeak-ng speaks the script sentence by sentence into one WAV file, with each
//     sentence's measured time in the result (internal/render);
//   - videogen: ffmpeg composes an MP4 from the creator's images and clips (the payload's "media",
//     which the host fills with the project's material), one shot per script beat, captions on the
//     narration's sentences, background music, in the platform's frame, fitted to the asked
//     duration; title cards without material; a PNG cover with "output": "image". A visible
//     "Reelforge" mark when the owner's role is free_user (SPEC.md Authentication 8);
//   - videoparse: ffprobe on a local file, or the page's own metadata (og:title, og:description,
//     og:image, <title>) fetched with a time-out, a size cap and the SSRF guard of internal/netguard
//     (no loopback, private or link-local address unless Options.FetchAllow names it);
//   - music: there is no local tool: a job that names the creator's own track (music_url) uses it,
//     any other fails with EXTERNAL_SERVICE_ERROR.
//
// Local files go under DataDir/assets/<user>/<kind>/<job id>.<ext>, written under a partial name
// and renamed once whole (internal/render), so a killed render never leaves a file there; the
// host removes the partial files of killed renders at start (RemovePartials). A tool missing from PATH fails
// the job with an EXTERNAL_SERVICE_ERROR saying what to install.
//
// The Engine ("generators") also runs one generator job per run for workflow manifests that name
// it; most workflows reach generators through the node engine's generator steps.
//
// Start at Engine.Run and executor.Execute.
package generators

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/reelforge/reelforge/internal/netguard"
	"github.com/reelforge/reelforge/internal/outbound"
	"github.com/reelforge/reelforge/internal/proc"
	"github.com/reelforge/reelforge/internal/render"
	"github.com/reelforge/reelforge/sdk/engine"
	"github.com/reelforge/reelforge/sdk/errcode"
)

// trackTimeout bounds the fetch of a music or narration track given as a link.
const trackTimeout = 60 * time.Second

// Options configure an Engine.
type Options struct {
	// MusicURL, VideogenURL, SpeechURL and VideoparseURL are the external generators
	// (MUSIC_API_URL, VIDEOGEN_API_URL, SPEECH_API_URL, VIDEOPARSE_API_URL). Empty: local work.
	MusicURL, VideogenURL, SpeechURL, VideoparseURL string
	// DataDir is the data directory (DATA_DIR); local results go under DataDir/assets.
	DataDir string
	// AssetBaseURL is how the host serves DataDir/assets: a file's URL is
	// AssetBaseURL/<user>/<kind>/<file>. Default "/api/assets/files".
	AssetBaseURL string
	// HTTPClient posts to the external generators above (addresses the operator configured, so
	// not guarded); nil means a default client.
	HTTPClient *http.Client
	// FetchAllow lists hosts or CIDRs the videoparse page fetch may reach although they are
	// loopback, private or link-local (CONTENT_FETCH_ALLOW). Links come from run inputs, that is
	// from users, so every other such address is refused (internal/netguard).
	FetchAllow []string
	// SubmitTimeout bounds the submission POST to an external generator; 0 means 15 s.
	SubmitTimeout time.Duration
	// LocalConcurrency bounds local jobs running at once; 0 means 2.
	LocalConcurrency int
	// FontFile is the font for captions and the mark; empty: the first of a few known fonts found.
	FontFile string
	// LookPath finds a tool; nil means exec.LookPath (tests replace it to hide tools).
	LookPath func(file string) (string, error)
	// Logger receives problems of local jobs; nil discards.
	Logger *slog.Logger
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
}

// executor does the generator jobs the host hands the engine (Execute). Safe for concurrent use.
type executor struct {
	opts   Options
	sem    chan struct{}
	pages  *http.Client // the SSRF-guarded client of videoparse page fetches
	tracks *http.Client // the SSRF-guarded client of music and narration tracks given as links

	// children records the tools local jobs run (DataDir/children), for the host's start-up
	// sweep of a previous life's leftovers.
	children proc.Registry
}

// newExecutor returns an executor with opts.
func newExecutor(opts Options) *executor {
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{}
	}
	if opts.SubmitTimeout <= 0 {
		opts.SubmitTimeout = 15 * time.Second
	}
	if opts.LocalConcurrency <= 0 {
		opts.LocalConcurrency = 2
	}
	if opts.AssetBaseURL == "" {
		opts.AssetBaseURL = "/api/assets/files"
	}
	opts.AssetBaseURL = strings.TrimRight(opts.AssetBaseURL, "/")
	if opts.DataDir == "" {
		opts.DataDir = "./data"
	}
	if opts.LookPath == nil {
		opts.LookPath = exec.LookPath
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &executor{opts: opts, sem: make(chan struct{}, opts.LocalConcurrency),
		children: proc.Registry{Dir: ChildrenDir(opts.DataDir)},
		pages:    netguard.New(opts.FetchAllow).Client(pageTimeout), tracks: netguard.New(opts.FetchAllow).Client(trackTimeout)}
}

// URL returns the external generator configured for jobType, or "" for local work.
func (d *executor) URL(jobType string) string {
	switch jobType {
	case engine.JobMusic:
		return d.opts.MusicURL
	case engine.JobVideogen:
		return d.opts.VideogenURL
	case engine.JobSpeech:
		return d.opts.SpeechURL
	case engine.JobVideoparse:
		return d.opts.VideoparseURL
	}
	return ""
}

// ChildrenDir is the folder of dataDir where the tools of local jobs are recorded while they run
// (internal/proc.Registry); the host sweeps it at start.
func ChildrenDir(dataDir string) string { return filepath.Join(dataDir, "children") }

// RemovePartials removes the partial files (render.IsPartial) of dataDir's asset folders
// (assets/<user>/<kind>/): renders cut off by the death of the plugin that ran them, which nothing
// serves or records (no result names them) but which take room. Only renders in progress have
// such files, so the host calls it at start, when no other live host uses dataDir. It reports
// how many it removed.
func RemovePartials(dataDir string) (int, error) {
	matches, err := filepath.Glob(filepath.Join(dataDir, "assets", "*", "*", "*"))
	if err != nil {
		return 0, fmt.Errorf("generators: partial files: %w", err)
	}
	removed := 0
	var errs []error
	for _, m := range matches {
		if !render.IsPartial(m) {
			continue
		}
		if st, err := os.Lstat(m); err != nil || !st.Mode().IsRegular() {
			continue
		}
		if err := os.Remove(m); err != nil {
			errs = append(errs, err)
			continue
		}
		removed++
	}
	return removed, errors.Join(errs...)
}

func (d *executor) submit(ctx context.Context, url string, job *engine.Job, payload map[string]any, callbackURL string) error {
	if callbackURL != "" && !strings.HasSuffix(callbackURL, engine.CallbackPathAI) {
		callbackURL = outbound.Join(callbackURL, engine.CallbackPathAI)
	}
	body := map[string]any{"job_id": job.JobID, "type": job.Type, "payload": payload, "callback_url": callbackURL}
	ans, err := outbound.PostJSON(ctx, d.opts.HTTPClient, url, body, d.opts.SubmitTimeout)
	if err == nil && !ans.OK() {
		err = fmt.Errorf("generator answered %s", ans.Brief())
	}
	if err != nil {
		return errcode.E("generators.Execute", engine.JobFailureCode(job.Type), fmt.Sprintf("the %s generator did not accept the job", job.Type), err)
	}
	return nil
}

// jobPayload reads a job's request: the payload object itself, or {url?, method?, payload} around it.
func jobPayload(raw json.RawMessage) (map[string]any, error) {
	payload := map[string]any{}
	if len(raw) == 0 || string(raw) == "null" {
		return payload, nil
	}
	if err := json.Unmarshal(raw, &payload); err != nil {
		return nil, errcode.E("generators.Execute", errcode.Validation, "the job request is not a JSON object", err)
	}
	if inner, ok := payload["payload"].(map[string]any); ok {
		wrapped := true
		for k := range payload {
			if k != "payload" && k != "url" && k != "method" {
				wrapped = false
			}
		}
		if wrapped {
			return inner, nil
		}
	}
	return payload, nil
}

// optionsFrom builds the Options of the generators plugin from its engine entry's settings
// (manifests/engines/generators.yaml): data_dir (the host's DATA_DIR), the external generators
// music_url, videogen_url, speech_url and videoparse_url, and fetch_allow (CONTENT_FETCH_ALLOW,
// comma-separated).
func optionsFrom(settings map[string]string, log *slog.Logger) Options {
	var allow []string
	for _, a := range strings.Split(settings["fetch_allow"], ",") {
		if a = strings.TrimSpace(a); a != "" {
			allow = append(allow, a)
		}
	}
	return Options{MusicURL: settings["music_url"], VideogenURL: settings["videogen_url"], SpeechURL: settings["speech_url"],
		VideoparseURL: settings["videoparse_url"], DataDir: settings["data_dir"], FetchAllow: allow, Logger: log}
}
