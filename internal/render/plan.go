package render

import (
	"regexp"
	"strings"
	"unicode"

	"github.com/reelforge/reelforge/internal/sentence"
)

// Limits of a planned video.
const (
	MaxSeconds = 180.0
	minShot    = 0.4 // seconds: a shorter beat lends its time to its neighbour
)

var markerLine = regexp.MustCompile(`\[[^\]\n]{0,40}\]`)

// Beats splits a script into its beats, each a list of sentences: a section marker ([Hook],
// [Beat 2], ...) or a line break starts a beat. The speech renderer and the video planner both
// use it, so the sentences the narration times are the sentences the captions show.
func Beats(script string) [][]string {
	var beats [][]string
	for _, part := range markerLine.Split(script, -1) {
		for _, line := range strings.Split(part, "\n") {
			line = strings.Join(strings.Fields(line), " ")
			if line == "" {
				continue
			}
			var ss []string
			for _, s := range sentence.Split(line, sentence.Ends+"；;") {
				if s = strings.TrimSpace(s); s != "" {
					ss = append(ss, s)
				}
			}
			if len(ss) > 0 {
				beats = append(beats, ss)
			}
		}
	}
	return beats
}

// Timed is a spoken sentence and when the narration says it, in seconds, with its words when they
// were timed (nil: unknown).
type Timed struct {
	Text  string  `json:"text"`
	Start float64 `json:"start"`
	End   float64 `json:"end"`
	Words []Word  `json:"words,omitempty"`
}

// Material is an image or clip of the creator's a video may show.
type Material struct {
	Path string
	Kind string // ShotImage or ShotClip
	// Duration is a clip's length in seconds (0: unknown; its shots then start at its beginning);
	// Sound says it has its own sound.
	Duration float64
	Sound    bool
	Focus    Focus // the creator's focal point of it
	Size     Frame // a picture's size in pixels, upright (PictureSize; zero: unknown)
}

// Plan is what a video is made of; Video lays it out.
type Plan struct {
	Script    string
	Title     string
	Sentences []Timed // when the narration says each sentence of Beats(Script), measured from it; nil: unknown
	Narration string  // the voice file ("" for none)
	// NarrationSecs is the narration's length; Target the asked duration (0: the narration's).
	NarrationSecs, Target float64
	Material              []Material
	Frame                 Frame
	Music, Mark, Font     string
	// Uncaptioned: the script only paces the shots (it is not what is heard): no captions.
	Uncaptioned bool
}

// palette colours the title cards of a video without material, one per beat.
var palette = []string{"0x1f2937", "0x0f3d56", "0x3b1f4a", "0x4a2d12", "0x12402f"}

// Video lays the plan out: shots of the material in the order given, cut on sentence boundaries
// and none longer than about maxShot (shots.go; title cards, one per beat, without material), captions on
// each sentence's spoken time, and the total fitted to the target: a narration longer than the
// target by more than 5% is sped up (at most twice), a shorter one is followed by silence while the
// last shot holds.
func (p *Plan) Video(out string) *Video {
	beats := Beats(p.Script)
	if len(beats) == 0 {
		beats = [][]string{{strings.TrimSpace(p.Title)}}
	}
	var flat []string
	owner := []int{} // beat of each sentence
	for b, ss := range beats {
		for _, s := range ss {
			flat = append(flat, s)
			owner = append(owner, b)
		}
	}
	total := p.Target
	if total <= 0 {
		total = p.NarrationSecs
	}
	if total <= 0 {
		total = max(5, 2.5*float64(len(beats)))
	}
	total = min(max(total, 1), MaxSeconds)
	tempo := 1.0
	if p.NarrationSecs > total*1.05 {
		tempo = min(p.NarrationSecs/total, 2)
	}
	// Sentence times on the video's clock: measured (sped up with the narration), else shares of
	// the time by length.
	times := make([]Timed, len(flat))
	if len(p.Sentences) == len(flat) && p.NarrationSecs > 0 {
		for i, s := range p.Sentences {
			times[i] = Timed{Text: flat[i], Start: min(s.Start/tempo, total), End: min(s.End/tempo, total)}
			times[i].Words = wordsOn(flat[i], s.Words, times[i].Start, times[i].End, tempo, total)
		}
	} else {
		spoken := total
		if p.NarrationSecs > 0 {
			spoken = min(p.NarrationSecs/tempo, total)
		}
		chars := 0
		for _, s := range flat {
			chars += weight(s)
		}
		t := 0.0
		for i, s := range flat {
			d := spoken * float64(weight(s)) / float64(max(chars, 1))
			times[i] = Timed{Text: s, Start: t, End: t + d, Words: spreadWords(s, t, t+d)}
			t += d
		}
	}
	// Beats: from their first sentence's start to the next beat's; the first from 0, the last to
	// the end.
	starts := make([]float64, len(beats))
	for i := len(flat) - 1; i >= 0; i-- {
		starts[owner[i]] = times[i].Start
	}
	starts[0] = 0
	v := &Video{Out: out, Frame: p.Frame, Duration: total, Narration: p.Narration, Tempo: tempo, Music: p.Music,
		Mark: p.Mark, Font: p.Font}
	if len(p.Material) > 0 {
		v.Shots = p.materialShots(times, total)
	} else {
		v.Shots = titleCards(beats, starts, total, p.Title)
	}
	for i, t := range times {
		if p.Uncaptioned {
			break
		}
		end := t.End
		if i+1 < len(times) && times[i+1].Start-end < 0.6 {
			end = times[i+1].Start // no blink between sentences said one after the other
		}
		v.Captions = append(v.Captions, Caption{Text: t.Text, From: t.Start, To: end, Words: t.Words})
	}
	return v
}

// wordsOn are the words of text (a sentence as the caption shows it) on the video's clock: the
// measured words (on the narration's clock, sped up by tempo) when they are the caption's words,
// else the estimate over the sentence's time from..to.
func wordsOn(text string, measured []Word, from, to, tempo, total float64) []Word {
	units := spokenUnits(text)
	if len(units) != len(measured) || len(units) == 0 {
		return spreadWords(text, from, to)
	}
	out := make([]Word, len(units))
	for i, u := range units {
		out[i] = Word{Text: unitText(text, u), Start: min(measured[i].Start/tempo, total), End: min(measured[i].End/tempo, total)}
	}
	return out
}

// weight is how long a sentence takes to say, roughly: Han characters, and Latin letters counted a
// third (about three letters a character's time).
func weight(s string) int {
	n := 0
	for _, r := range s {
		switch {
		case unicode.Is(unicode.Han, r):
			n += 3
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			n++
		}
	}
	return max(n, 1)
}
