package node_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/reelforge/reelforge/sdk/engine"
)

// TestTemplateSaysTheMaterialsDescriptions: the host's descriptions of the run's pictures
// (engine.InputMediaDescriptions) become a beat's content when their words match the topic, with
// "material: <name>" in beat_sources and the trace; a description of something else is left out.
func TestTemplateSaysTheMaterialsDescriptions(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		topic, language string
		described       []any
		want            []string // sentences the script says, each from its material
		wantNames       []string
		unwanted        []string
	}{
		"english, one of two matches": {topic: "Three reasons to love pour-over coffee", described: []any{
			map[string]any{"ref": "a1", "name": "kettle.jpg", "description": "a gooseneck kettle pouring slowly over the coffee bed"},
			map[string]any{"ref": "a2", "name": "cat.jpg", "description": "Our cat asleep on the windowsill."},
		}, want: []string{"A gooseneck kettle pouring slowly over the coffee bed."}, wantNames: []string{"kettle.jpg"},
			unwanted: []string{"cat", "windowsill"}},
		"chinese": {topic: "三个理由让你爱上手冲咖啡", described: []any{
			map[string]any{"ref": "a3", "name": "手冲.jpg", "description": "手冲咖啡的水流要细而稳，闷蒸三十秒。"},
			map[string]any{"ref": "a4", "name": "猫.jpg", "description": "小猫在窗台上睡觉。"},
		}, want: []string{"手冲咖啡的水流要细而稳，闷蒸三十秒。"}, wantNames: []string{"手冲.jpg"}, unwanted: []string{"小猫"}},
		"nothing matches": {topic: "5 tips for better sleep", described: []any{
			map[string]any{"ref": "a5", "name": "latte.jpg", "description": "Latte art: a heart poured on oat milk."},
		}, unwanted: []string{"Latte", "material:"}},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			out, _ := writeScript(t, "voiceover", map[string]any{"topic": tt.topic, "duration": 30,
				engine.InputMediaDescriptions: tt.described}, nil)
			script := fmt.Sprint(out["script"])
			srcs := fmt.Sprint(out["beat_sources"])
			for i, w := range tt.want {
				if !strings.Contains(script, w) {
					t.Errorf("script = %q, want it to say %q", script, w)
				}
				if src := "material: " + tt.wantNames[i]; !strings.Contains(srcs, src) ||
					!strings.Contains(fmt.Sprint(out["template"]), src) || !strings.Contains(fmt.Sprint(out["sources"]), src) {
					t.Errorf("beat_sources %s, template %q, sources %v: want %s", srcs, out["template"], out["sources"], src)
				}
			}
			for _, u := range tt.unwanted {
				if strings.Contains(script, u) || strings.Contains(srcs+fmt.Sprint(out["template"]), u) {
					t.Errorf("script %q / sources %s say %q, from a description not about the topic", script, srcs, u)
				}
			}
		})
	}
}
