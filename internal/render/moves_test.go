package render

import "testing"

// TestImageMoveKeepsTheFocus: every move of a picture keeps its focal point at least a fifth of
// the frame from the frame's edges all along the pan (a pan is linear: its ends suffice), or, when
// the point is nearer the picture's edge than that, no nearer the frame's edge than a still crop
// would put it; for a face high in a portrait photo (a creator's 60 s video panned it out of the
// top of the frame) and in the corners, in every frame.
func TestImageMoveKeepsTheFocus(t *testing.T) {
	t.Parallel()
	frames := []Frame{{1080, 1920}, {1920, 1080}, {1080, 1080}, {1080, 1350}}
	foci := []Focus{{X: 0.5, Y: 0.17, Set: true}, {X: 0.3, Y: 0.3, Set: true}, {X: 0.75, Y: 0.8, Set: true}, {X: 0.5, Y: 0.5, Set: true}}
	for _, f := range frames {
		for _, focus := range foci {
			for variant := range moves {
				m := imageMove(f, variant, focus)
				for _, at := range [][2]float64{{m.X0, m.Y0}, {m.X1, m.Y1}} {
					// The frame's top-left corner in the crop, and the point in the frame.
					x := focus.x()*float64(m.W) - at[0]*float64(m.W-f.W)
					y := focus.y()*float64(m.H) - at[1]*float64(m.H-f.H)
					// Nearest the edges allowed: a fifth of the frame, or where a still crop of the
					// frame's own size puts the point.
					w, h := float64(f.W), float64(f.H)
					left, right := min(w/5, focus.x()*w), max(w*4/5, focus.x()*w)
					top, bottom := min(h/5, focus.y()*h), max(h*4/5, focus.y()*h)
					if x < left-1 || x > right+1 || y < top-1 || y > bottom+1 {
						t.Errorf("frame %v, focus %+v, move %d at %v: the point at (%.0f, %.0f) of the frame, want a fifth of it from every edge",
							f, focus, variant, at, x, y)
					}
				}
				// Without a focus the move is the variation's own.
				if got, want := imageMove(f, variant, Focus{}), imageMove(f, variant, Focus{X: 0.5, Y: 0.5}); got != want {
					t.Errorf("imageMove(%v, %d) without a focus = %+v, want %+v", f, variant, got, want)
				}
			}
		}
	}
	// A pan that keeps a centred focus is left as it is.
	if m := imageMove(Frame{1080, 1920}, 0, Focus{X: 0.5, Y: 0.5, Set: true}); m.X0 != 0 || m.X1 != 1 {
		t.Errorf("a centred focus shortened the pan: %+v", m)
	}
}
