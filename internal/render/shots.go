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
