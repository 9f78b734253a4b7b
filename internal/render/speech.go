package render

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sync/errgroup"
)

// Speech is a narration to render with espeak-ng.
type Speech struct {
	Out    string  // the WAV file to write
	Script string  // split with Beats; each sentence is spoken on its own and timed
	Voice  string  // an espeak-ng voice
	Speed  int     // words a minute; 0 means 165
	Target float64 // seconds the narration should last (0: no target); the speed is fitted to about 95% of it
	Tools  Tools
}

// Spoken is a rendered narration: its length, the time of each sentence and of its words
// (alignWords), the voice and speed used.
type Spoken struct {
	Duration  float64
	Sentences []Timed
	Voice     string
	Speed     int
	// Asked is the speed asked for (Speech.Speed, or 165) and Natural the narration's length at
	// it: they differ from Speed and Duration when the speed was fitted to a target.
	Asked   int
	Natural float64
}

// paceSlack is how far a fitted speed may stray from the one asked for before Pace speaks up: a
// fifth either way still sounds like the voice's own pace.
const paceSlack = 0.2

// Pace says in a sentence how far the narration was sped up or slowed down to fit its target, or
// "" when its speed is within paceSlack of the one asked for. A template script keeps every item
// its topic promises whatever the duration, so three tips in 10 s are spoken at more than twice
// the usual pace: the run completes, and only this sentence tells the creator why the voice rushes
// and what to change.
func (s *Spoken) Pace() string {
	if s.Asked <= 0 || s.Speed <= 0 {
		return ""
	}
	ratio := float64(s.Speed) / float64(s.Asked)
	switch {
	case ratio > 1+paceSlack:
		return fmt.Sprintf("spoken at %d words a minute, %.1f times the usual %d, to fit the duration: at the usual pace the script takes %.0f s; a longer duration or a shorter script sounds natural",
			s.Speed, ratio, s.Asked, s.Natural)
	case ratio < 1-paceSlack:
		return fmt.Sprintf("spoken at %d words a minute, slower than the usual %d, to fill the duration: at the usual pace the script takes %.0f s; a shorter duration or a longer script sounds natural",
			s.Speed, s.Asked, s.Natural)
	}
	return ""
}

// Speech speeds: espeak-ng stays intelligible between these.
const (
	minSpeed = 120
	maxSpeed = 380
)

// Speak renders s. Each sentence is a separate espeak-ng utterance whose length is read from its
// WAV header, so the sentence times are measured, not guessed; the utterances are joined into one
// WAV. With a target, a narration off by more than 5% is spoken again at a fitted speed (once).
func (s *Speech) Speak(ctx context.Context) (*Spoken, error) {
	var sentences []string
	for _, b := range Beats(s.Script) {
		sentences = append(sentences, b...)
	}
	if len(sentences) == 0 {
		return nil, errors.New("render: nothing to say")
	}
	speed := s.Speed
	if speed <= 0 {
		speed = 165
	}
	out, err := s.speak(ctx, sentences, speed)
	if err != nil {
		return nil, err
	}
	natural := out.Duration
	if s.Target > 0 {
		want := s.Target * 0.95
		if math.Abs(out.Duration-want)/want > 0.05 {
			fitted := int(math.Round(float64(speed) * out.Duration / want))
			fitted = min(max(fitted, minSpeed), maxSpeed)
			if fitted != speed {
				if out, err = s.speak(ctx, sentences, fitted); err != nil {
					return nil, err
				}
			}
		}
	}
	out.Asked, out.Natural = speed, natural
	return out, nil
}

func (s *Speech) speak(ctx context.Context, sentences []string, speed int) (*Spoken, error) {
	work, err := os.MkdirTemp("", "reelforge-speech-")
	if err != nil {
		return nil, fmt.Errorf("render: working folder: %w", err)
	}
	defer os.RemoveAll(work)
	// The sentences are spoken side by side, one espeak-ng run per core: each is a short run of
	// its own (about 30 ms), and a creator waits for all of them before the render starts.
	wavs := make([]string, len(sentences))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(runtime.NumCPU())
	for i, text := range sentences {
		txt := filepath.Join(work, fmt.Sprintf("s%03d.txt", i))
		wavs[i] = filepath.Join(work, fmt.Sprintf("s%03d.wav", i))
		g.Go(func() error {
			if err := os.WriteFile(txt, []byte(text), 0o600); err != nil {
				return fmt.Errorf("render: write sentence: %w", err)
			}
			return s.Tools.Run(gctx, "espeak-ng", "-v", s.Voice, "-s", strconv.Itoa(speed), "-w", wavs[i], "-f", txt)
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	var format []byte
	var data bytes.Buffer
	var byteRate float64
	out := &Spoken{Voice: s.Voice, Speed: speed}
	for i, text := range sentences {
		f, pcm, err := readWAV(wavs[i])
		if err != nil {
			return nil, fmt.Errorf("render: espeak-ng wrote no usable WAV: %w", err)
		}
		if format == nil {
			format = f
			byteRate = float64(binary.LittleEndian.Uint32(f[8:12]))
		} else if !bytes.Equal(format, f) {
			return nil, errors.New("render: espeak-ng changed its WAV format between sentences")
		}
		start := float64(data.Len()) / byteRate
		data.Write(pcm)
		le := binary.LittleEndian
		words := alignWords(text, pcm, int(le.Uint32(f[4:8])), int(le.Uint16(f[2:4])), int(le.Uint16(f[14:16])), start)
		out.Sentences = append(out.Sentences, Timed{Text: text, Start: round3(start), End: round3(float64(data.Len()) / byteRate), Words: words})
	}
	out.Duration = round3(float64(data.Len()) / byteRate)
	return out, writeWAV(s.Out, format, data.Bytes())
}

func round3(f float64) float64 { return math.Round(f*1000) / 1000 }

// readWAV returns a RIFF/WAVE file's fmt chunk and the bytes of its data chunk (to the end of the
// file when the header's size is a streaming placeholder).
func readWAV(path string) (format, data []byte, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	if len(b) < 12 || string(b[0:4]) != "RIFF" || string(b[8:12]) != "WAVE" {
		return nil, nil, fmt.Errorf("%s is not a WAV file", filepath.Base(path))
	}
	pos := 12
	for pos+8 <= len(b) {
		id, size := string(b[pos:pos+4]), int(binary.LittleEndian.Uint32(b[pos+4:pos+8]))
		pos += 8
		switch id {
		case "fmt ":
			if size < 16 || pos+size > len(b) {
				return nil, nil, errors.New("short fmt chunk")
			}
			format = b[pos : pos+16]
		case "data":
			if format == nil {
				return nil, nil, errors.New("no fmt chunk before the data")
			}
			if size == 0 || pos+size > len(b) {
				size = len(b) - pos
			}
			return format, b[pos : pos+size], nil
		}
		pos += size + size%2
	}
	return nil, nil, io.ErrUnexpectedEOF
}

// WAVDuration is the length of a WAV file in seconds.
func WAVDuration(path string) (float64, error) {
	f, data, err := readWAV(path)
	if err != nil {
		return 0, err
	}
	rate := binary.LittleEndian.Uint32(f[8:12])
	if rate == 0 {
		return 0, errors.New("a WAV file of byte rate 0")
	}
	return float64(len(data)) / float64(rate), nil
}

func writeWAV(path string, format, data []byte) error {
	h := make([]byte, 0, 4+4+8+len(format)+8+len(data))
	h = append(h, "RIFF"...)
	h = binary.LittleEndian.AppendUint32(h, uint32(4+8+len(format)+8+len(data)))
	h = append(h, "WAVEfmt "...)
	h = binary.LittleEndian.AppendUint32(h, uint32(len(format)))
	h = append(h, format...)
	h = append(h, "data"...)
	h = binary.LittleEndian.AppendUint32(h, uint32(len(data)))
	h = append(h, data...)
	return publish(path, func(tmp string) error {
		if err := os.WriteFile(tmp, h, 0o640); err != nil {
			return fmt.Errorf("render: write %s: %w", filepath.Base(path), err)
		}
		return nil
	})
}

// MeasureSentences times sentences in a narration it did not render (an external generator's):
// the pauses ffmpeg's silencedetect finds are the candidate boundaries, and each boundary is the
// pause nearest to where the sentences' lengths put it. Without pauses it returns nil.
func (t Tools) MeasureSentences(ctx context.Context, audio string, sentences []string, total float64) []Timed {
	if len(sentences) == 0 || total <= 0 {
		return nil
	}
	// silencedetect reports on stderr.
	log, err := t.Stderr(ctx, "ffmpeg", "-hide_banner", "-nostdin", "-i", audio, "-af", "silencedetect=noise=-35dB:d=0.18", "-f", "null", "-")
	if err != nil {
		return nil
	}
	var pauses []float64
	var start float64
	for _, l := range strings.Split(log, "\n") {
		if i := strings.Index(l, "silence_start: "); i >= 0 {
			start, _ = strconv.ParseFloat(strings.Fields(l[i+15:])[0], 64)
		}
		if i := strings.Index(l, "silence_end: "); i >= 0 {
			end, _ := strconv.ParseFloat(strings.Fields(l[i+13:])[0], 64)
			if start > 0.05 && end < total-0.05 {
				pauses = append(pauses, (start+end)/2)
			}
		}
	}
	if len(pauses) == 0 {
		return nil
	}
	chars, sum := 0, 0
	for _, s := range sentences {
		chars += weight(s)
	}
	timed := make([]Timed, len(sentences))
	prev, next := 0.0, 0
	for i, s := range sentences {
		sum += weight(s)
		end := total
		if i < len(sentences)-1 {
			expected := total * float64(sum) / float64(chars)
			end = expected
			best := -1
			for j := next; j < len(pauses); j++ {
				if pauses[j] <= prev {
					continue
				}
				if best < 0 || math.Abs(pauses[j]-expected) < math.Abs(pauses[best]-expected) {
					best = j
				}
			}
			if best >= 0 && math.Abs(pauses[best]-expected) < total/float64(len(sentences)) {
				end, next = pauses[best], best+1
			}
		}
		timed[i] = Timed{Text: s, Start: round3(prev), End: round3(end)}
		prev = end
	}
	return timed
}
