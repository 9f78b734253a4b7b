package extract

import (
	"strings"
	"testing"
)

func TestExtractive(t *testing.T) {
	frags := []string{
		"Our brand colour is teal. The logo needs clear space.",
		"Creators must not repost other people's videos. Reposting leads to a ban.",
		"短视频平台禁止搬运他人作品。违者封号。",
	}
	ans := Extractive{}.Answer("What happens if I repost videos?", frags)
	if !strings.Contains(ans, "repost other people's videos. [#2]") {
		t.Fatalf("answer %q", ans)
	}
	// Every sentence of the answer carries a citation.
	for _, part := range strings.SplitAfter(ans, "]") {
		if strings.TrimSpace(part) != "" && !strings.Contains(part, "[#") {
			t.Fatalf("uncited part %q", part)
		}
	}
	if ans := (Extractive{}).Answer("搬运会怎样", frags); !strings.Contains(ans, "[#3]") {
		t.Fatalf("Chinese answer %q", ans)
	}
	if (Extractive{}).Answer("x", nil) != "" {
		t.Fatal("no fragments")
	}
}

// A sentence the fragments hold more than once is quoted once, citing each fragment holding it; the
// repeat does not take the place of another sentence.
func TestExtractiveQuotesOnce(t *testing.T) {
	lamp := "The lighthouse lamp stands 12 metres above the rock."
	frags := []string{
		lamp + " The lamp is lit at dusk. " + lamp,
		"The lamp of the lighthouse was replaced in 1990. " + lamp,
	}
	ans := Extractive{}.Answer("how high does the lighthouse lamp stand", frags)
	if strings.Count(ans, lamp) != 1 || !strings.Contains(ans, lamp+" [#1] [#2]") {
		t.Fatalf("answer %q; want %q once, cited [#1] [#2]", ans, lamp)
	}
	if want := 3; strings.Count(ans, ".") != want {
		t.Fatalf("answer %q; want %d sentences", ans, want)
	}
}

// Chinese numerals are numbers: a note saying 四十五分钟 answers 多长时间 as one saying 45 minutes does.
func TestHoldsChineseNumerals(t *testing.T) {
	t.Parallel()
	tests := []struct {
		question, text string
		want           bool
	}{
		{"这期视频拍摄需要多长时间？", "拍摄大约需要四十五分钟。", true},
		{"剪辑要多久？", "剪辑一般十五分钟就够了。", true},
		{"收费多少钱？", "每条广告两百元。", true},
		{"需要几天？", "通常两天半。", true},
		{"要多长时间？", "大约半小时。", true},
		{"要多长时间？", "我们在上海拍摄。", false},
		{"How long does it take?", "About 45 minutes.", true},
	}
	for _, tt := range tests {
		k := KindOf(tt.question)
		if k == KindNone {
			t.Fatalf("KindOf(%q) = none", tt.question)
		}
		if k == KindAmount || k == KindCount {
			k = KindNumber
		}
		if got := Holds(tt.text, k); got != tt.want {
			t.Errorf("Holds(%q, kind of %q) = %t, want %t", tt.text, tt.question, got, tt.want)
		}
	}
}
