package render

import (
	"fmt"
	"strconv"
	"strings"
)

// How a video is encoded: one decision for every render, standard or draft.

// Quality is how finely a video is rendered: QualityStandard (the default) is what the platforms
// take at their best, QualityDraft a fast preview.
type Quality string

// Qualities.
const (
	QualityStandard Quality = "standard"
	QualityDraft    Quality = "draft"
)

// Qualities are the values of a run's quality input.
var Qualities = []string{string(QualityStandard), string(QualityDraft)}

// ParseQuality reads a quality input ("" is standard); anything else is an error naming the values.
func ParseQuality(s string) (Quality, error) {
	switch q := Quality(strings.ToLower(strings.TrimSpace(s))); q {
	case "":
		return QualityStandard, nil
	case QualityStandard, QualityDraft:
		return q, nil
	}
	return "", fmt.Errorf("render: quality %q is not one of %s", s, strings.Join(Qualities, ", "))
}

// FPS is the frame rate of a quality's videos: 30, what the platforms show; a draft keeps the 25
// it had before 1080p (a sixth fewer frames to encode: the draft's speed target, BENCHMARKS.md's
// render row, is bound by x264's frames).
func (q Quality) FPS() int {
	if q == QualityDraft {
		return 25
	}
	return 30
}

// shortSide is the short side of a video's frame in pixels: 1080 (Douyin, Kuaishou, Xiaohongshu,
// Bilibili and YouTube all take 1080p) and 720 for a draft.
func (q Quality) shortSide() int {
	if q == QualityDraft {
		return 720
	}
	return 1080
}

// encoder is libx264's settings of a quality. Chosen by measurement (make bench, BENCHMARKS.md's
// render section: encode CPU, size and SSIM against a lossless reference at each candidate):
//
//   - x264's ultrafast preset is the only one that keeps a 30 s 1080x1920 video within 10 s on two
//     cores: superfast spends about twice its encode CPU, veryfast two and a half times.
//   - ultrafast turns CABAC and the 8x8 transform off, which makes the stream Constrained
//     Baseline. Turning both back on (the High profile the platforms expect) costs a few per cent
//     of encode CPU and saves about a sixth of the size at the same rate setting and SSIM.
//   - A constant quantiser (QP), not CRF: CRF's rate control analyses every frame at a quarter of
//     its size first (x264's lookahead thread), a quarter of ultrafast's whole encode. Ultrafast
//     has neither adaptive quantisation nor macroblock trees, so CRF's per-frame choice was all it
//     added. At 1080p, QP 19 spends 25% less encode CPU than CRF 23 (x264's default) for a file
//     17% smaller and an SSIM of 0.9969 against 0.9974 (QP 17 would match that SSIM, at 22% less
//     CPU). At 720p, QP 22 gives a higher SSIM than the draft's former CRF 26 at 28% less CPU.
//
// A draft keeps 720p at 25 fps, with its own quantiser.
func (q Quality) encoder() []string {
	qp := "19"
	if q == QualityDraft {
		qp = "22"
	}
	return []string{"-c:v", "libx264", "-preset", "ultrafast", "-qp", qp, "-profile:v", "high", "-x264-params", "cabac=1:8x8dct=1"}
}

// AudioRate is the sample rate of rendered audio (AAC at 48 kHz, what the platforms deliver).
const AudioRate = 48000

// videoArgs are the output options of a video's picture: H.264 in the quality's settings at its FPS.
func (v *Video) videoArgs() []string {
	args := append([]string{"-r", strconv.Itoa(v.Quality.FPS())}, v.Quality.encoder()...)
	return append(args, "-pix_fmt", "yuv420p")
}

// audioArgs are the output options of a video's sound: AAC at 48 kHz, stereo.
//
// ffmpeg's fast AAC coder: its default (twoloop) spent 1.85 s of CPU on a 30 s video's sound, the
// fast one 1.05 s (of a render's 17 s), at 160 kbit/s where the two are alike to the ear.
func audioArgs() []string {
	return []string{"-c:a", "aac", "-aac_coder", "fast", "-b:a", "160k", "-ar", strconv.Itoa(AudioRate), "-ac", "2"}
}

// faststart puts an MP4's index at the front, so a player starts before the whole file is loaded.
var faststart = []string{"-movflags", "+faststart"}
