package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/reelforge/reelforge/plugins/generators"
	"github.com/reelforge/reelforge/sdk/engine"
)

// renderScript is about 30 seconds of narration in five beats.
const renderScript = `[Hook] Most people rush their morning coffee. Here is how to make it the best part of the day.
[Beat 1] Start with fresh beans, and grind them just before you brew.
[Beat 2] Heat the water until it is just off the boil, then pour slowly in small circles.
[Beat 3] Give it three minutes, and taste the difference a little patience makes.
[Call to action] Follow for more simple rituals, and share this with a friend who loves coffee!`

// benchRender times what a creator waits for: a 30 s voiceover_video from three pictures and one
// clip, through the local generators as a run uses them (espeak-ng speaks the script, ffmpeg
// renders the video over the narration). Target: at most 10 s for 30 s at 1080x1920 (issue 40).
func benchRender(ctx context.Context, o *options) error {
	for _, tool := range []string{"espeak-ng", "ffmpeg"} {
		if _, err := exec.LookPath(tool); err != nil {
			fmt.Printf("## Render\n\nskipped: %s is not installed (scripts/install-tools.sh)\n\n", tool)
			return nil
		}
	}
	dir, err := os.MkdirTemp("", "reelforge-bench-render")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	folder := filepath.Join(dir, "assets", "bench")
	if err := os.MkdirAll(folder, 0o750); err != nil {
		return err
	}
	// The material, made before the clock starts: three photos of a phone's size and a clip.
	var media []any
	for name, src := range map[string]string{
		"a.jpg": "testsrc2=s=3000x4000:d=1", "b.jpg": "mandelbrot=s=3000x4000", "c.jpg": "gradients=s=4000x3000:d=1",
		"d.mp4": "testsrc=s=1280x720:r=30:d=6",
	} {
		args := []string{"-y", "-loglevel", "error", "-f", "lavfi", "-i", src, "-frames:v", "1"}
		if filepath.Ext(name) == ".mp4" {
			args = []string{"-y", "-loglevel", "error", "-f", "lavfi", "-i", src, "-c:v", "libx264", "-pix_fmt", "yuv420p"}
		}
		if out, err := exec.CommandContext(ctx, "ffmpeg", append(args, filepath.Join(folder, name))...).CombinedOutput(); err != nil {
			return fmt.Errorf("make %s: %v %s", name, err, out)
		}
		media = append(media, "assets/bench/"+name)
	}
	// The jobs go to the generators engine as the host hands them to its plugin (runs.PluginJobs):
	// a Run of engine.JobWorkflow carrying the job, answered when the work is done. The engine runs
	// in this process: the work is the tools', children either way.
	eng := generators.New(generators.Options{DataDir: dir})
	owner := engine.UserContext{UserID: "bench", Role: "user"}
	job := func(id, typ string, payload map[string]any) (map[string]any, time.Duration, time.Duration, error) {
		raw, _ := json.Marshal(payload)
		var asInput map[string]any
		j, _ := json.Marshal(engine.Job{JobID: id, RunID: "bench", Type: typ, Request: raw})
		_ = json.Unmarshal(j, &asInput)
		cpu0, t0 := childCPU(), time.Now()
		res, err := eng.Run(ctx, nil, &engine.RunRequest{RunID: "bench", Workflow: engine.Workflow{ID: engine.JobWorkflow, Engine: generators.Name},
			Inputs: map[string]any{"job": asInput}, User: owner, Attempt: 1})
		wall, cpu := time.Since(t0), childCPU()-cpu0
		switch {
		case err != nil:
			return nil, 0, 0, fmt.Errorf("%s job: %w", typ, err)
		case res.Status != engine.StatusCompleted:
			return nil, 0, 0, fmt.Errorf("%s job: %s %+v", typ, res.Status, res.Error)
		}
		return res.Outputs, wall, cpu, nil
	}
	fmt.Printf("## Render\n\nA voiceover_video from three 12-megapixel pictures and one clip through the local generators "+
		"(espeak-ng speaks the script, ffmpeg renders the video over it: the sound mixed, ducked and loudness-normalised, "+
		"shots of at most 4 s with fades); the fastest of %d renders counts (on a shared machine the others measure the "+
		"neighbours). Targets (issue 40): 30 s at 1080x1920 in at most 10 s, 60 s in at most 20 s, a draft at least 8x real time. "+
		"Load average before: %s.\n\n", renderTries, loadAverage())
	fmt.Println("| video | frame | shots | MB | speech s | video s (all) | tools' CPU s | total s | x real time |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|")
	var reference map[string]any // the 30 s standard render, the encoder table's source
	for _, c := range []struct {
		secs    float64
		quality string
	}{{30, "standard"}, {60, "standard"}, {30, "draft"}} {
		if o.renderQuality != "" && c.quality != o.renderQuality {
			continue
		}
		script := renderScript
		if c.secs > 45 {
			script += "\n" + renderScript
		}
		id := fmt.Sprintf("%s-%.0f", c.quality, c.secs)
		speech, speechWall, speechCPU, err := job("speech-"+id, engine.JobSpeech, map[string]any{"script": script, "duration": c.secs})
		if err != nil {
			return err
		}
		var video map[string]any
		var walls []time.Duration
		var videoWall, videoCPU time.Duration
		for i := range renderTries {
			v, wall, cpu, err := job(fmt.Sprintf("video-%s-%d", id, i), engine.JobVideogen, map[string]any{"script": script, "duration": c.secs,
				"platform": "douyin", "quality": c.quality, "audio_url": speech["audio_url"], "sentences": speech["sentences"], "media": media})
			if err != nil {
				return err
			}
			walls = append(walls, wall)
			if video == nil || wall < videoWall {
				video, videoWall, videoCPU = v, wall, cpu
			}
		}
		if c.secs == 30 && c.quality == "standard" {
			reference = video
		}
		total := speechWall + videoWall
		fmt.Printf("| %.0f s %s | %vx%v | %v | %.1f | %.2f | %.2f (%v) | %.2f | **%.2f** | %.1f |\n", c.secs, c.quality, video["width"], video["height"],
			video["shots"], video["file_size"].(float64)/1e6, speechWall.Seconds(), videoWall.Seconds(), strings.Join(roundAll(walls), ", "),
			(speechCPU + videoCPU).Seconds(), total.Seconds(), c.secs/total.Seconds())
	}
	fmt.Println()
	if reference == nil { // -render-quality draft
		return nil
	}
	return encoders(ctx, filepath.Join(dir, filepath.FromSlash(reference["file_path"].(string))))
}

// renderTries is how many times each video is rendered.
const renderTries = 2

// encoders times x264's candidate settings on the first 10 s of a 1080x1920 render (decoded to a
// lossless reference first), with the size and SSIM of each: the measurement behind the choice in
// internal/render's encode.go.
func encoders(ctx context.Context, video string) error {
	dir := filepath.Dir(video)
	ref := filepath.Join(dir, "reference.mkv")
	if out, err := exec.CommandContext(ctx, "ffmpeg", "-y", "-loglevel", "error", "-i", video, "-t", "10", "-an", "-c:v", "ffv1", ref).CombinedOutput(); err != nil {
		return fmt.Errorf("reference: %v %s", err, out)
	}
	fmt.Printf("### Encoder settings\n\n10 s of the 30 s render (1080x1920, 300 frames) encoded by x264 with each candidate; "+
		"SSIM against the lossless reference. Load average before: %s.\n\n", loadAverage())
	fmt.Println("| preset | CRF | options | profile | encode s | fps | kB | SSIM |")
	fmt.Println("|---|---|---|---|---|---|---|---|")
	ssim := regexp.MustCompile(`All:([0-9.]+)`)
	for _, c := range []struct{ preset, crf, params string }{
		{"ultrafast", "26", ""}, {"ultrafast", "23", ""}, {"ultrafast", "23", "cabac=1:8x8dct=1"}, {"ultrafast", "26", "cabac=1:8x8dct=1"},
		{"ultrafast", "20", "cabac=1:8x8dct=1"}, {"superfast", "23", ""}, {"veryfast", "23", ""},
	} {
		out := filepath.Join(dir, "candidate.mp4")
		args := []string{"-y", "-loglevel", "error", "-i", ref, "-c:v", "libx264", "-preset", c.preset, "-crf", c.crf, "-pix_fmt", "yuv420p"}
		if c.params != "" {
			args = append(args, "-x264-params", c.params)
		}
		t0 := time.Now()
		if b, err := exec.CommandContext(ctx, "ffmpeg", append(args, out)...).CombinedOutput(); err != nil {
			return fmt.Errorf("encode %v: %v %s", c, err, b)
		}
		wall := time.Since(t0)
		b, _ := exec.CommandContext(ctx, "ffmpeg", "-hide_banner", "-i", out, "-i", ref, "-lavfi", "ssim", "-f", "null", "-").CombinedOutput()
		score := "?"
		if m := ssim.FindSubmatch(b); m != nil {
			score = string(m[1])
		}
		profile, _ := exec.CommandContext(ctx, "ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries", "stream=profile", "-of", "csv=p=0", out).Output()
		st, err := os.Stat(out)
		if err != nil {
			return err
		}
		fmt.Printf("| %s | %s | %s | %s | %.2f | %.0f | %d | %s |\n", c.preset, c.crf, c.params, strings.TrimSpace(string(profile)), wall.Seconds(),
			300/wall.Seconds(), st.Size()/1000, score)
	}
	fmt.Println()
	return nil
}

// childCPU is the CPU time (user and system) of this process's finished children: the tools.
func childCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func roundAll(ds []time.Duration) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = fmt.Sprintf("%.2f s", d.Seconds())
	}
	return out
}
