package render

import (
	"math"
	"sort"
)

// The shot plan: how a video's time is cut into shots of the creator's material.

// Pacing of the shots: none longer than maxShot (a held picture reads as a slide show on the
// platforms), none shorter than minCut where a sentence boundary can be chosen instead.
const (
	maxShot = 4.0
	minCut  = 1.5
)

// MinShow is the shortest shot made to show more material: more material than the pacing has
// shots is shown too, each item once, in shots down to MinShow seconds.
const MinShow = 1.0

// materialShots cuts total seconds into shots of p.Material: at sentence boundaries (times' starts)
// where one falls between minCut and maxShot into a shot, else in equal parts of at most maxShot
// up to the next boundary. The material comes in the creator's order, again and again; a picture
// shown again gets its next move (another pan and crop) and a clip goes on where it left off.
func (p *Plan) materialShots(times []Timed, total float64) []Shot {
	var bounds []float64
	for _, t := range times[min(1, len(times)):] {
		if t.Start > minShot && t.Start < total-minShot {
			bounds = append(bounds, t.Start)
		}
	}
	sort.Float64s(bounds)
	var cuts []float64 // the end of each shot
	for t := 0.0; t < total-1e-6; {
		end := total
		if total-t > maxShot+1e-6 {
			end = -1
			for _, b := range bounds {
				if b >= t+minCut && b <= t+maxShot && b <= total-minShot {
					end = b // the latest boundary in reach: fewest cuts
				}
			}
			if end < 0 {
				next := total
				for _, b := range bounds {
					if b > t+maxShot {
						next = b
						break
					}
				}
				end = t + (next-t)/math.Ceil((next-t)/maxShot-1e-9)
			}
		}
		cuts = append(cuts, end)
		t = end
	}
	cuts = showEach(cuts, len(p.Material))
	shots := make([]Shot, 0, len(cuts))
	uses := make([]int, len(p.Material))
	shown := make([]float64, len(p.Material)) // seconds of each clip shown so far
	start := 0.0
	for k, end := range cuts {
		i := k % len(p.Material)
		m := p.Material[i]
		s := Shot{Kind: m.Kind, Path: m.Path, Duration: end - start, Focus: m.Focus, Size: m.Size}
		switch m.Kind {
		case ShotImage:
			s.Move = uses[i] + i // two pictures do not start with the same move
		case ShotClip:
			s.Sound = m.Sound
			if m.Duration > 0 {
				s.Offset = math.Mod(shown[i], m.Duration)
				s.Move = int(shown[i] / m.Duration) // a closer view once the clip comes round again
			}
			shown[i] += s.Duration
		}
		uses[i]++
		shots = append(shots, s)
		start = end
	}
	return shots
}

// showEach cuts the shots (cuts: the end of each) into equal parts until there is a shot for each
// of n items of material, each time the shot whose parts are longest taking one part more, while
// its parts last at least MinShow: a creator who gave twelve photos for 30 s sees all twelve, not
// the first nine the pacing alone has room for. The cuts the pacing chose (sentence boundaries)
// stay; the new ones fall within a shot.
func showEach(cuts []float64, n int) []float64 {
	if len(cuts) >= n {
		return cuts
	}
	lengths := make([]float64, len(cuts))
	parts := make([]int, len(cuts))
	start := 0.0
	for k, end := range cuts {
		lengths[k], parts[k], start = end-start, 1, end
	}
	for shots := len(cuts); shots < n; shots++ {
		k := 0
		for j := range lengths {
			if lengths[j]/float64(parts[j]+1) > lengths[k]/float64(parts[k]+1) {
				k = j
			}
		}
		if lengths[k]/float64(parts[k]+1) < MinShow-1e-9 {
			break // the rest of the material is left out (the render's result says how much)
		}
		parts[k]++
	}
	out := make([]float64, 0, n)
	start = 0
	for k, end := range cuts {
		for p := 1; p < parts[k]; p++ {
			out = append(out, start+lengths[k]*float64(p)/float64(parts[k]))
		}
		out = append(out, end)
		start = end
	}
	return out
}

// titleCards are the shots of a video without material: a card per beat, in turn of the palette,
// the first with the title.
func titleCards(beats [][]string, starts []float64, total float64, title string) []Shot {
	var shots []Shot
	for b := range beats {
		end := total
		if b+1 < len(beats) {
			end = starts[b+1]
		}
		d := end - starts[b]
		if n := len(shots); n > 0 && d < minShot {
			shots[n-1].Duration += max(d, 0) // too short to show: the previous shot holds
			continue
		}
		s := Shot{Kind: ShotTitle, Duration: d, Color: palette[b%len(palette)]}
		if b == 0 {
			s.Text = title
		}
		shots = append(shots, s)
	}
	return shots
}
