package content

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/sdk/errcode"
)

// The creator's own metadata of an asset: its focal point (the renderer keeps it in every crop,
// docs/video.md) and its description (the template script writer says it where it matches the
// topic, docs/scripts.md). Set on upload or with PATCH /api/materials/:id; every other metadata
// key (the sniffed type, the storage, tags) is the host's and cannot be set this way.

// maxDescription bounds an asset's description, in characters.
const maxDescription = 1000

// Focus is a focal point: x from the left, y from the top, each 0..1.
type Focus struct {
	X float64 `json:"x"`
	Y float64 `json:"y"`
}

// MetaChange is a creator's change to an asset's metadata; the zero value changes nothing.
type MetaChange struct {
	Focus       *Focus  // set the focal point
	ClearFocus  bool    // remove it (a null focus)
	Description *string // set the description; "" removes it
}

func (m MetaChange) empty() bool { return m.Focus == nil && !m.ClearFocus && m.Description == nil }

// set is the change as store.AssetMetadataParams.Set: a nil value removes the key.
func (m MetaChange) set() map[string]any {
	out := map[string]any{}
	if m.Focus != nil {
		out["focus"] = map[string]any{"x": m.Focus.X, "y": m.Focus.Y}
	} else if m.ClearFocus {
		out["focus"] = nil
	}
	if m.Description != nil {
		if *m.Description == "" {
			out["description"] = nil
		} else {
			out["description"] = *m.Description
		}
	}
	return out
}

// unit checks one coordinate of a focal point: a number from 0 to 1, or 400 naming field.
func unit(field string, v float64, ok bool) (float64, error) {
	if !ok || math.IsNaN(v) || v < 0 || v > 1 {
		return 0, errcode.Invalid(field, "must be a number from 0 to 1 (0 is the left or top edge, 1 the right or bottom)")
	}
	return v, nil
}

// FormFocus reads a focal point from an upload's form fields: focus "x,y", or focus_x and
// focus_y (both or neither). nil when none is given; 400 naming the field that is wrong.
func FormFocus(focus, fx, fy string) (*Focus, error) {
	focus, fx, fy = strings.TrimSpace(focus), strings.TrimSpace(fx), strings.TrimSpace(fy)
	if focus != "" {
		if fx != "" || fy != "" {
			return nil, errcode.Invalid("focus", "give focus as \"x,y\" or focus_x and focus_y, not both")
		}
		xs, ys, found := strings.Cut(focus, ",")
		if !found {
			return nil, errcode.Invalid("focus", "must be \"x,y\", two numbers from 0 to 1 (e.g. \"0.5,0.3\")")
		}
		fx, fy = strings.TrimSpace(xs), strings.TrimSpace(ys)
		x, errX := strconv.ParseFloat(fx, 64)
		y, errY := strconv.ParseFloat(fy, 64)
		if errX != nil || errY != nil || x < 0 || x > 1 || y < 0 || y > 1 || math.IsNaN(x) || math.IsNaN(y) {
			return nil, errcode.Invalid("focus", "must be \"x,y\", two numbers from 0 to 1 (e.g. \"0.5,0.3\")")
		}
		return &Focus{x, y}, nil
	}
	if fx == "" && fy == "" {
		return nil, nil
	}
	if fx == "" {
		return nil, errcode.Invalid("focus_x", "is required with focus_y")
	}
	if fy == "" {
		return nil, errcode.Invalid("focus_y", "is required with focus_x")
	}
	xv, errX := strconv.ParseFloat(fx, 64)
	x, err := unit("focus_x", xv, errX == nil)
	if err != nil {
		return nil, err
	}
	yv, errY := strconv.ParseFloat(fy, 64)
	y, err := unit("focus_y", yv, errY == nil)
	if err != nil {
		return nil, err
	}
	return &Focus{x, y}, nil
}

// JSONFocus reads a focal point from a JSON value (field names it in errors): {"x": .., "y": ..},
// "x,y", or null, which clears it.
func JSONFocus(field string, raw json.RawMessage) (f *Focus, clear bool, err error) {
	raw = json.RawMessage(strings.TrimSpace(string(raw)))
	if string(raw) == "null" {
		return nil, true, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		f, err := FormFocus(s, "", "")
		if err != nil || f == nil {
			return nil, false, errcode.Invalid(field, "must be {\"x\": .., \"y\": ..} or \"x,y\", each a number from 0 to 1, or null")
		}
		return f, false, nil
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil {
		return nil, false, errcode.Invalid(field, "must be {\"x\": .., \"y\": ..} or \"x,y\", each a number from 0 to 1, or null")
	}
	for k := range obj {
		if k != "x" && k != "y" {
			return nil, false, errcode.Invalid(field+"."+k, "is not a field of a focal point (x and y)")
		}
	}
	var out Focus
	for _, c := range []struct {
		name string
		dst  *float64
	}{{"x", &out.X}, {"y", &out.Y}} {
		v, present := obj[c.name]
		var n float64
		ok := present && json.Unmarshal(v, &n) == nil
		if *c.dst, err = unit(field+"."+c.name, n, ok); err != nil {
			return nil, false, err
		}
	}
	return &out, false, nil
}

// CleanDescription trims a description and checks its length (400 naming field).
func CleanDescription(field, d string) (string, error) {
	d = strings.TrimSpace(d)
	if n := utf8.RuneCountInString(d); n > maxDescription {
		return "", errcode.Invalid(field, fmt.Sprintf("is %d characters; at most %d", n, maxDescription))
	}
	if !utf8.ValidString(d) {
		return "", errcode.Invalid(field, "is not valid UTF-8 text")
	}
	return d, nil
}

// SetMeta applies a creator's change to the metadata of userID's asset id and returns the asset
// as stored; 404 when it is not theirs (another account's looks the same as an unknown one) or
// is deleted. Other keys of the metadata are kept. The asset's library hears of it (asset:sync,
// action "updated").
func (s *Service) SetMeta(ctx context.Context, userID, id string, ch MetaChange) (*store.Asset, error) {
	if ch.empty() {
		return s.OwnAsset(ctx, userID, id)
	}
	a, err := s.st.SetAssetMetadata(ctx, store.AssetMetadataParams{UserID: userID, ID: id, Set: ch.set()})
	if errors.Is(err, store.ErrNotFound) {
		return nil, errcode.New(errcode.NotFound, "Asset not found")
	}
	if err != nil {
		return nil, err
	}
	s.notifyAsset(ctx, a, "updated")
	return a, nil
}
