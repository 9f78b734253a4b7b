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

	"github.com/reelforge/reelforge/internal/render"
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
	// The material, made before the clock starts: three photos of a phone's size and a clip, in
	// this order (the run's media order is its shots' order: a different order is another video).
	var media []any
	for _, m := range []struct{ name, src string }{
		{"a.jpg", "testsrc2=s=3000x4000:d=1"}, {"b.jpg", "mandelbrot=s=3000x4000"}, {"c.jpg", "gradients=s=4000x3000:d=1"},
		{"d.mp4", "testsrc=s=1280x720:r=30:d=6"},
	} {
		name, src := m.name, m.src
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
		total := speechWall + videoWall
		fmt.Printf("| %.0f s %s | %vx%v | %v | %.1f | %.2f | %.2f (%v) | %.2f | **%.2f** | %.1f |\n", c.secs, c.quality, video["width"], video["height"],
			video["shots"], video["file_size"].(float64)/1e6, speechWall.Seconds(), videoWall.Seconds(), strings.Join(roundAll(walls), ", "),
			(speechCPU + videoCPU).Seconds(), total.Seconds(), c.secs/total.Seconds())
	}
	fmt.Println()
	if o.renderQuality == string(render.QualityDraft) {
		return nil
	}
	var paths []string
	for _, m := range media {
		paths = append(paths, m.(string))
	}
	return encoders(ctx, dir, paths)
}

// renderTries is how many times each video is rendered.
const renderTries = 2

// encoders measures x264's candidate settings on 10 s of the bench's material at 1080x1920 and 30
// fps (and at the draft's 720x1280 and 25 fps), each against a lossless reference made here: the
// three pictures panned and the clip scaled, as a render shows them, with a caption's text. The
// reference is not one of the renders, whose own encoding would flatter the settings it was made
// with. Encode CPU is the candidate's run less a run that only decodes the reference: the measure
// behind the choice in internal/render's encode.go.
func encoders(ctx context.Context, dir string, media []string) error {
	ref := filepath.Join(dir, "reference.mkv")
	// Four shots of 2.5 s: a picture panned across a crop a third larger than the frame, three
	// times, then the clip cut to the frame.
	var graph []string
	for i := range 3 {
		graph = append(graph, fmt.Sprintf("[%d:v]scale=1404:2496:force_original_aspect_ratio=increase,crop=1404:2496,setsar=1,"+
			"loop=loop=74:size=1:start=0,setpts=N/(30*TB),crop=1080:1920:x='(iw-ow)*n/75':y='(ih-oh)/2',format=yuv420p[s%d]", i, i))
	}
	graph = append(graph, "[3:v]crop=w='ih*9/16':h=ih,scale=1080:1920,setsar=1,fps=30,trim=duration=2.5,setpts=PTS-STARTPTS,format=yuv420p[s3]",
		"[s0][s1][s2][s3]concat=n=4:v=1:a=0,drawtext=text='Grind the beans just before you brew':fontsize=62:fontcolor=white:"+
			"box=1:boxcolor=black@0.55:boxborderw=16:x=(w-text_w)/2:y=h*0.74")
	args := []string{"-y", "-loglevel", "error"}
	for _, m := range media {
		args = append(args, "-i", filepath.Join(dir, filepath.FromSlash(m)))
	}
	args = append(args, "-filter_complex", strings.Join(graph, ";"), "-t", "10", "-c:v", "libx264", "-preset", "ultrafast", "-qp", "0", ref)
	if out, err := exec.CommandContext(ctx, "ffmpeg", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("reference: %v %s", err, out)
	}
	fmt.Printf("### Encoder settings\n\nx264 on 10 s of the bench's material (its pictures panned, its clip, a caption), SSIM "+
		"against the lossless reference; encode CPU is the candidate's less a decode-only run's. Load average before: %s.\n\n", loadAverage())
	fmt.Println("| frame | preset | rate | options | profile | encode CPU s | kB | SSIM |")
	fmt.Println("|---|---|---|---|---|---:|---:|---|")
	ssim := regexp.MustCompile(`All:([0-9.]+)`)
	for _, frame := range []struct{ size, fps string }{{"1080:1920", "30"}, {"720:1280", "25"}} {
		scale := []string{"-vf", "scale=" + frame.size + ",fps=" + frame.fps}
		decode, err := runCPU(ctx, append(append([]string{"-y", "-loglevel", "error", "-i", ref}, scale...), "-f", "null", "-")...)
		if err != nil {
			return fmt.Errorf("decode the reference: %w", err)
		}
		candidates := []struct{ preset, rate, params string }{
			{"ultrafast", "crf 23", ""}, {"ultrafast", "crf 23", "cabac=1:8x8dct=1"}, {"ultrafast", "qp 17", "cabac=1:8x8dct=1"},
			{"ultrafast", "qp 19", "cabac=1:8x8dct=1"}, {"ultrafast", "qp 19", "8x8dct=1"}, {"ultrafast", "qp 21", "cabac=1:8x8dct=1"},
			{"superfast", "crf 23", ""}, {"veryfast", "crf 23", ""},
		}
		if frame.fps == "25" {
			candidates = []struct{ preset, rate, params string }{
				{"ultrafast", "crf 26", "cabac=1:8x8dct=1"}, {"ultrafast", "qp 22", "cabac=1:8x8dct=1"}, {"ultrafast", "qp 23", "cabac=1:8x8dct=1"},
			}
		}
		for _, c := range candidates {
			out := filepath.Join(dir, "candidate.mp4")
			rate := strings.Fields(c.rate)
			args := append(append([]string{"-y", "-loglevel", "error", "-i", ref}, scale...),
				"-c:v", "libx264", "-preset", c.preset, "-"+rate[0], rate[1], "-pix_fmt", "yuv420p")
			if c.params != "" {
				args = append(args, "-x264-params", c.params)
			}
			cpu, err := runCPU(ctx, append(args, out)...)
			if err != nil {
				return fmt.Errorf("encode %v: %w", c, err)
			}
			b, _ := exec.CommandContext(ctx, "ffmpeg", append(append([]string{"-hide_banner", "-i", out, "-i", ref, "-lavfi"},
				"[1:v]scale="+frame.size+",fps="+frame.fps+"[r];[0:v][r]ssim"), "-f", "null", "-")...).CombinedOutput()
			score := "?"
			if m := ssim.FindSubmatch(b); m != nil {
				score = string(m[1])
			}
			profile, _ := exec.CommandContext(ctx, "ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries", "stream=profile", "-of", "csv=p=0", out).Output()
			st, err := os.Stat(out)
			if err != nil {
				return err
			}
			fmt.Printf("| %s | %s | %s | %s | %s | %.2f | %d | %s |\n", strings.Replace(frame.size, ":", "x", 1), c.preset, strings.ToUpper(rate[0])+" "+rate[1],
				c.params, strings.TrimSpace(string(profile)), (cpu - decode).Seconds(), st.Size()/1000, score)
		}
	}
	fmt.Println()
	return nil
}

// runCPU runs ffmpeg with args and is its CPU time (user and system).
func runCPU(ctx context.Context, args ...string) (time.Duration, error) {
	cmd := exec.CommandContext(ctx, "ffmpeg", args...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return 0, fmt.Errorf("%v %s", err, out)
	}
	return cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(), nil
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
