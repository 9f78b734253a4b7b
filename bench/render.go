package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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
func benchRender(ctx context.Context, _ *options) error {
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
	const secs = 30.0
	speech, speechWall, speechCPU, err := job("speech", engine.JobSpeech, map[string]any{"script": renderScript, "duration": secs})
	if err != nil {
		return err
	}
	// The video is rendered three times and the fastest counts: on a shared machine the others
	// measure the neighbours.
	var video map[string]any
	var walls []time.Duration
	var videoWall, videoCPU time.Duration
	for i := range 3 {
		v, wall, cpu, err := job(fmt.Sprintf("video-%d", i), engine.JobVideogen, map[string]any{"script": renderScript, "duration": secs,
			"platform": "douyin", "audio_url": speech["audio_url"], "sentences": speech["sentences"], "media": media})
		if err != nil {
			return err
		}
		walls = append(walls, wall)
		if video == nil || wall < videoWall {
			video, videoWall, videoCPU = v, wall, cpu
		}
	}
	fmt.Printf("## Render\n\nA %.0f s voiceover_video (1080x1920 at 30 fps, H.264 High, loudness-normalised) from three 12-megapixel pictures and one clip, "+
		"%v shots, %v captions on measured sentence times, %.1f MB; local espeak-ng and ffmpeg; the fastest of three "+
		"renders (all: %v). Target: at most 10 s (3x real time) on two cores.\n\n",
		video["duration"], video["shots"], video["captions"], video["file_size"].(float64)/1e6, roundAll(walls))
	fmt.Println("| step | wall s | tools' CPU s | x real time |")
	fmt.Println("|---|---|---|---|")
	row := func(name string, wall, cpu time.Duration) {
		fmt.Printf("| %s | %.2f | %.2f | %.1f |\n", name, wall.Seconds(), cpu.Seconds(), secs/wall.Seconds())
	}
	row("speech (espeak-ng, sentence by sentence)", speechWall, speechCPU)
	row("video (ffmpeg)", videoWall, videoCPU)
	row("**voiceover_video**", speechWall+videoWall, speechCPU+videoCPU)
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
