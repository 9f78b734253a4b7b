package api_test

import (
	"strings"
	"testing"
)

// TestMaterialMetadata: a creator sets an asset's focal point and description on upload and with
// PATCH /api/materials/:id, reads them back, and is refused bad values (400 naming the field) and
// another account's asset (404); the host's own metadata keys are kept and cannot be set.
func TestMaterialMetadata(t *testing.T) {
	t.Parallel()
	for _, d := range drivers() {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			b := setupContent(t, d.open, 1<<20)
			alice, _ := b.user("alice")
			bob, _ := b.user("bob")

			r := b.upload("/api/materials/upload", alice, "file", "latte.png", "image/png", pngBytes,
				map[string]string{"focus": "0.3, 0.2", "description": "  Latte art: a heart poured on oat milk.  "})
			if r.status != 201 {
				t.Fatalf("upload = %d %s", r.status, r.raw)
			}
			asset := r.data("asset").(map[string]any)
			id := asset["id"].(string)
			meta := asset["metadata"].(map[string]any)
			if f, _ := meta["focus"].(map[string]any); f["x"] != 0.3 || f["y"] != 0.2 ||
				meta["description"] != "Latte art: a heart poured on oat milk." || meta["sniffed_mime"] != "image/png" {
				t.Errorf("uploaded metadata = %v", meta)
			}
			r = b.upload("/api/materials/upload", alice, "file", "b.png", "image/png", pngBytes, map[string]string{"focus_x": "1", "focus_y": "0"})
			if f, _ := r.data("asset").(map[string]any)["metadata"].(map[string]any)["focus"].(map[string]any); r.status != 201 || f["x"] != 1.0 || f["y"] != 0.0 {
				t.Errorf("upload with focus_x/focus_y = %d %s", r.status, r.raw)
			}

			badUploads := map[string]struct {
				fields map[string]string
				field  string
			}{
				"focus out of range": {map[string]string{"focus": "1.2,0.5"}, "focus"},
				"focus one number":   {map[string]string{"focus": "0.5"}, "focus"},
				"focus words":        {map[string]string{"focus": "left,top"}, "focus"},
				"focus_x alone":      {map[string]string{"focus_x": "0.5"}, "focus_y"},
				"focus_y negative":   {map[string]string{"focus_x": "0.5", "focus_y": "-0.1"}, "focus_y"},
				"focus_x NaN":        {map[string]string{"focus_x": "NaN", "focus_y": "0.1"}, "focus_x"},
				"both forms":         {map[string]string{"focus": "0.5,0.5", "focus_x": "0.5", "focus_y": "0.5"}, "focus"},
				"description long":   {map[string]string{"description": strings.Repeat("字", 1001)}, "description"},
			}
			for name, tc := range badUploads {
				r := b.upload("/api/materials/upload", alice, "file", "x.png", "image/png", pngBytes, tc.fields)
				if r.status != 400 || !strings.Contains(r.raw, `"field":"`+tc.field+`"`) {
					t.Errorf("%s: upload = %d %s, want 400 naming %s", name, r.status, r.raw, tc.field)
				}
			}

			// PATCH: set, read back; the other keys stay.
			r = b.do("PATCH", "/api/materials/"+id, alice, map[string]any{"metadata": map[string]any{
				"focus": map[string]any{"x": 0.7, "y": 0.4}, "description": "A flat white in a blue cup."}})
			if r.status != 200 {
				t.Fatalf("PATCH = %d %s", r.status, r.raw)
			}
			r = b.do("GET", "/api/materials/"+id, alice, nil)
			meta = r.data("asset").(map[string]any)["metadata"].(map[string]any)
			if f, _ := meta["focus"].(map[string]any); f["x"] != 0.7 || f["y"] != 0.4 || meta["description"] != "A flat white in a blue cup." ||
				meta["sniffed_mime"] != "image/png" {
				t.Errorf("read back = %v", meta)
			}
			// Only the description changes; "x,y" is a focus too; null and "" remove.
			r = b.do("PATCH", "/api/materials/"+id, alice, `{"metadata":{"description":""}}`)
			meta = r.data("asset").(map[string]any)["metadata"].(map[string]any)
			if _, has := meta["description"]; r.status != 200 || has || meta["focus"] == nil {
				t.Errorf("PATCH description \"\" = %d %v, want it removed and the focus kept", r.status, meta)
			}
			r = b.do("PATCH", "/api/materials/"+id, alice, `{"metadata":{"focus":"0.1,0.9"}}`)
			if f, _ := r.data("asset").(map[string]any)["metadata"].(map[string]any)["focus"].(map[string]any); r.status != 200 || f["x"] != 0.1 || f["y"] != 0.9 {
				t.Errorf("PATCH focus \"x,y\" = %d %s", r.status, r.raw)
			}
			r = b.do("PATCH", "/api/materials/"+id, alice, `{"metadata":{"focus":null}}`)
			if _, has := r.data("asset").(map[string]any)["metadata"].(map[string]any)["focus"]; r.status != 200 || has {
				t.Errorf("PATCH focus null = %d %s, want it removed", r.status, r.raw)
			}

			bad := map[string]struct{ body, field string }{
				"x too big":        {`{"metadata":{"focus":{"x":1.5,"y":0.5}}}`, "metadata.focus.x"},
				"y missing":        {`{"metadata":{"focus":{"x":0.5}}}`, "metadata.focus.y"},
				"y a string":       {`{"metadata":{"focus":{"x":0.5,"y":"top"}}}`, "metadata.focus.y"},
				"focus other key":  {`{"metadata":{"focus":{"x":0.5,"y":0.5,"z":1}}}`, "metadata.focus.z"},
				"focus a number":   {`{"metadata":{"focus":0.5}}`, "metadata.focus"},
				"description num":  {`{"metadata":{"description":5}}`, "metadata.description"},
				"description long": {`{"metadata":{"description":"` + strings.Repeat("a", 1001) + `"}}`, "metadata.description"},
				"host's key":       {`{"metadata":{"sniffed_mime":"text/html"}}`, "metadata.sniffed_mime"},
				"no metadata":      {`{"focus":{"x":0.5,"y":0.5}}`, "metadata"},
			}
			for name, tc := range bad {
				if r := b.do("PATCH", "/api/materials/"+id, alice, tc.body); r.status != 400 || !strings.Contains(r.raw, `"field":"`+tc.field+`"`) {
					t.Errorf("%s: PATCH = %d %s, want 400 naming %s", name, r.status, r.raw, tc.field)
				}
			}
			if r := b.do("GET", "/api/materials/"+id, alice, nil); r.data("asset").(map[string]any)["metadata"].(map[string]any)["sniffed_mime"] != "image/png" {
				t.Errorf("after refused changes metadata = %s", r.raw)
			}

			// Another account's asset, an unknown one, none: 404 / 401; nothing changed.
			if r := b.do("PATCH", "/api/materials/"+id, bob, `{"metadata":{"description":"mine now"}}`); r.status != 404 {
				t.Errorf("bob's PATCH of alice's asset = %d %s, want 404", r.status, r.raw)
			}
			if r := b.do("PATCH", "/api/materials/00000000-0000-4000-8000-000000000000", alice, `{"metadata":{"description":"x"}}`); r.status != 404 {
				t.Errorf("PATCH unknown = %d, want 404", r.status)
			}
			if r := b.do("PATCH", "/api/materials/"+id, "", `{"metadata":{"description":"x"}}`); r.status != 401 {
				t.Errorf("PATCH without a token = %d, want 401", r.status)
			}
			if r := b.do("GET", "/api/materials/"+id, alice, nil); strings.Contains(r.raw, "mine now") || strings.Contains(r.raw, `"description":"x"`) {
				t.Errorf("another's or a refused PATCH changed the asset: %s", r.raw)
			}
			// A deleted asset cannot be changed.
			if r := b.do("POST", "/api/materials/batch-delete", alice, map[string]any{"ids": []string{id}}); r.status != 200 {
				t.Fatalf("delete = %d %s", r.status, r.raw)
			}
			if r := b.do("PATCH", "/api/materials/"+id, alice, `{"metadata":{"description":"x"}}`); r.status != 404 {
				t.Errorf("PATCH deleted = %d, want 404", r.status)
			}
		})
	}
}
