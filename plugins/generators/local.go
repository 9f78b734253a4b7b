package generators

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/reelforge/reelforge/internal/render"
	"github.com/reelforge/reelforge/sdk/engine"
	"github.com/reelforge/reelforge/sdk/errcode"
)

// Tool is a program a local job runs, and the Debian package that has it.
type Tool struct{ Program, Package string }

// localTools names the programs each local job type runs: speech speaks with espeak-ng, videogen
// renders with ffmpeg and reads its material's length with ffprobe, music checks the creator's
// track with ffprobe. (videoparse runs ffprobe only on a local file; a link needs no tool.)
var localTools = map[string][]Tool{
	engine.JobSpeech:   {{"espeak-ng", "espeak-ng"}},
	engine.JobVideogen: {{"ffmpeg", "ffmpeg"}, {"ffprobe", "ffmpeg"}},
	engine.JobMusic:    {{"ffprobe", "ffmpeg"}},
}

// LocalTools returns the programs a local job of jobType runs (host/capability reports the
// missing ones on /health, from this same list).
func LocalTools(jobType string) []Tool { return slices.Clone(localTools[jobType]) }

// Install is what to do to get a missing tool, as an error message says it.
func (t Tool) Install() string {
	return fmt.Sprintf("install %s (Debian/Ubuntu: apt-get install %s, or scripts/install-tools.sh)", t.Package, t.Package)
}

// envVars names the variable that configures an external generator of each type.
var envVars = map[string]string{
	engine.JobMusic: "MUSIC_API_URL", engine.JobVideogen: "VIDEOGEN_API_URL",
	engine.JobSpeech: "SPEECH_API_URL", engine.JobVideoparse: "VIDEOPARSE_API_URL",
}

// localJob is one job executed on this machine.
type localJob struct {
	job     *engine.Job
	payload map[string]any
	owner   engine.UserContext
}

// checkLocal says whether job can be done on this machine: its tool is on PATH (music: the
// creator gave a track).
func (d *executor) checkLocal(job *engine.Job, payload map[string]any) error {
	if job.Type == engine.JobMusic && musicRef(payload) == "" {
		return errcode.New(errcode.ExternalService,
			"no music generator is configured and there is no local music tool: set MUSIC_API_URL to a music generator, or give a track of yours (music_url)")
	}
	for _, t := range localTools[job.Type] {
		if _, err := d.opts.LookPath(t.Program); err != nil {
			return errcode.E("generators.Execute", errcode.ExternalService, fmt.Sprintf(
				"no %s generator is configured (%s) and %s is not on PATH: %s", job.Type, envVars[job.Type], t.Program, t.Install()), err)
		}
	}
	return nil
}

// work does a local job within ctx (a slot of LocalConcurrency first): its result, or its failure.
func (d *executor) work(ctx context.Context, lj *localJob) (json.RawMessage, *engine.RunError) {
	var result map[string]any
	var err error
	select {
	case d.sem <- struct{}{}:
		defer func() { <-d.sem }()
		switch lj.job.Type {
		case engine.JobSpeech:
			result, err = d.speech(ctx, lj)
		case engine.JobVideogen:
			result, err = d.video(ctx, lj)
		case engine.JobVideoparse:
			result, err = d.videoparse(ctx, lj)
		case engine.JobMusic:
			result, err = d.music(ctx, lj)
		default:
			err = errcode.Newf(errcode.ExternalService, "no local %s generator", lj.job.Type)
		}
	case <-ctx.Done():
		err = ctx.Err()
	}
	var raw json.RawMessage
	if err == nil {
		result["engine"] = "local"
		if raw, err = json.Marshal(result); err != nil {
			err = errcode.E("generators.local", errcode.ExternalService, "the result could not be encoded", err)
		}
	}
	if err != nil {
		d.opts.Logger.Warn("local generator job failed", "job_id", lj.job.JobID, "type", lj.job.Type, "error", err)
		return nil, d.failure(lj.job.Type, err)
	}
	return raw, nil
}

// failure turns err into the job's error: its catalogue code, else the job type's, with a public
// message (a time-out says so).
func (d *executor) failure(jobType string, err error) *engine.RunError {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return &engine.RunError{Code: string(engine.JobFailureCode(jobType)), Message: fmt.Sprintf("the local %s generator timed out", jobType)}
	case errors.Is(err, context.Canceled):
		return &engine.RunError{Code: string(engine.JobFailureCode(jobType)), Message: fmt.Sprintf("the local %s generator was stopped", jobType)}
	}
	if e := errcode.As(err); e != nil {
		return &engine.RunError{Code: string(e.Code), Message: e.Message()}
	}
	return &engine.RunError{Code: string(engine.JobFailureCode(jobType)), Message: fmt.Sprintf("the local %s generator failed", jobType)}
}

// marked reports whether a video of this owner gets the visible mark: every role but the paid ones.
func marked(u engine.UserContext) bool { return u.Role != "admin" && u.Role != "user" }

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

// assetPath is where a local result of kind for the job goes: the absolute file, its path relative to
// DataDir, and its URL.
func (d *executor) assetPath(lj *localJob, kind, ext string) (abs, rel, link string, err error) {
	name := unsafeName.ReplaceAllString(lj.job.JobID, "") + "." + ext
	under := filepath.Join(userDir(lj.owner), kind, name)
	abs = filepath.Join(d.opts.DataDir, "assets", under)
	if err := os.MkdirAll(filepath.Dir(abs), 0o750); err != nil {
		return "", "", "", errcode.E("generators.local", errcode.StorageFull, "the asset folder could not be created", err)
	}
	return abs, filepath.ToSlash(filepath.Join("assets", under)), d.opts.AssetBaseURL + "/" + filepath.ToSlash(under), nil
}

// userDir is the owner's asset folder name.
func userDir(u engine.UserContext) string {
	if user := unsafeName.ReplaceAllString(u.UserID, ""); user != "" {
		return user
	}
	return "shared"
}

// localFile resolves a media reference of the payload to a file of the owner's asset folder
// (DataDir/assets/<user>): a path relative to DataDir or absolute, a file:// URL, or a URL under
// AssetBaseURL. Anything else (remote URLs, other users' files, paths outside) is "".
func (d *executor) localFile(lj *localJob, ref string) string {
	ref = strings.TrimSpace(ref)
	if ref == "" {
		return ""
	}
	prefix := d.opts.AssetBaseURL
	if bu, err := url.Parse(prefix); err == nil {
		prefix = bu.Path
	}
	if u, err := url.Parse(ref); err == nil && len(u.Scheme) > 1 {
		switch u.Scheme {
		case "file":
			ref = u.Path
		case "http", "https":
			ref = u.Path
			if !strings.HasPrefix(ref, prefix+"/") {
				return ""
			}
		default:
			return ""
		}
	}
	if prefix != "" && strings.HasPrefix(ref, prefix+"/") {
		ref = filepath.Join("assets", filepath.FromSlash(strings.TrimPrefix(ref, prefix+"/")))
	}
	return d.inFolder(filepath.Join(d.opts.DataDir, "assets", userDir(lj.owner)), ref)
}

// inFolder returns p (relative to DataDir, or absolute) when it names an existing regular file
// inside folder, else "".
func (d *executor) inFolder(folder, p string) string {
	root, err := filepath.Abs(folder)
	if err != nil {
		return ""
	}
	if !filepath.IsAbs(p) {
		if p, err = filepath.Abs(filepath.Join(d.opts.DataDir, p)); err != nil {
			return ""
		}
	}
	p = filepath.Clean(p)
	if rel, err := filepath.Rel(root, p); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return ""
	}
	if st, err := os.Stat(p); err != nil || !st.Mode().IsRegular() || render.IsPartial(p) {
		return "" // a partial file is a render in progress or cut off: no material
	}
	return p
}

func str(m map[string]any, keys ...string) string {
	for _, k := range keys {
		if s, ok := m[k].(string); ok && strings.TrimSpace(s) != "" {
			return strings.TrimSpace(s)
		}
	}
	return ""
}

func num(m map[string]any, key string) (float64, bool) {
	switch v := m[key].(type) {
	case float64:
		return v, true
	case json.Number:
		f, err := v.Float64()
		return f, err == nil
	case int:
		return float64(v), true
	}
	return 0, false
}

var markers = regexp.MustCompile(`\[[^\]\n]{0,40}\]`)

// spokenText is a script without its section markers ([Hook], [Beat 2], ...) and extra blank space,
// capped at limit runes.
func spokenText(s string, limit int) string {
	s = markers.ReplaceAllString(s, " ")
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.Join(strings.Fields(l), " "); l != "" {
			lines = append(lines, l)
		}
	}
	s = strings.Join(lines, "\n")
	if r := []rune(s); len(r) > limit {
		s = string(r[:limit])
	}
	return s
}
