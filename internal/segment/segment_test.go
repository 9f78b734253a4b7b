package segment

import (
	"reflect"
	"strings"
	"testing"
	"unicode"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

func TestTerms(t *testing.T) {
	cases := []struct {
		in   string
		want []string
	}{
		{"The Quick brown FOX", []string{"quick", "brown", "fox"}},
		{"Ｆｕｌｌ－ｗｉｄｔｈ １２３", []string{"full", "width", "123"}},
		{"Café déjà vu", []string{"cafe", "deja", "vu"}},
		{"短视频平台规则", []string{"短", "短视", "视", "视频", "频", "频平", "平", "平台", "台", "台规", "规", "规则", "则"}},
		{"我", []string{"我"}},
		{"用AI写脚本，很快。", []string{"用", "ai", "写", "写脚", "脚", "脚本", "本", "很", "很快", "快"}},
		{"Straße", []string{"strasse"}},
		{"e-mail: a.b@c.com", []string{"e", "mail", "b", "c", "com"}},
		{"", []string{}},
	}
	for _, c := range cases {
		got := Terms(c.in)
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("Terms(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestChineseWordInSentence(t *testing.T) {
	doc := IndexForm("本平台禁止搬运他人的短视频内容，违者封号。")
	for _, q := range Query("视频") {
		if !strings.Contains(" "+doc+" ", " "+q+" ") {
			t.Fatalf("query term %q not in index form %q", q, doc)
		}
	}
}

func TestIndexFormTokens(t *testing.T) {
	// Every term is letters and digits only, so an FTS5 unicode61 or to_tsvector('simple') split of
	// IndexForm on non-alphanumerics gives back exactly Terms.
	in := "Hello, 世界! naïve résumé — ½ ﬁle 3.14 x_y ＡＢＣ Ωμέγα Привет 한국어 テスト ไทย"
	terms := Terms(in)
	split := strings.FieldsFunc(IndexForm(in), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsNumber(r) })
	if !reflect.DeepEqual(terms, split) {
		t.Fatalf("terms %q, resplit %q", terms, split)
	}
	for _, term := range terms {
		if term != strings.ToLower(term) {
			t.Errorf("term %q not lower case", term)
		}
	}
}

func TestQueryDistinct(t *testing.T) {
	if got := Query("go go Go gopher"); !reflect.DeepEqual(got, []string{"go", "gopher"}) {
		t.Fatalf("Query = %q", got)
	}
}

func FuzzTerms(f *testing.F) {
	f.Add("Hello 世界 naïve")
	f.Fuzz(func(t *testing.T, s string) {
		for _, term := range Terms(s) {
			if term == "" || strings.ContainsAny(term, " \t\n") {
				t.Fatalf("bad term %q", term)
			}
			for _, r := range term {
				if !unicode.IsLetter(r) && !unicode.IsNumber(r) {
					t.Fatalf("term %q has %U", term, r)
				}
			}
		}
	})
}

func BenchmarkTerms(b *testing.B) {
	text := strings.Repeat("The knowledge base splits text into chunks and embeds them. 知识库把文本切成块。", 20)
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		Terms(text)
	}
}

func TestCJKUnifiedIsHan(t *testing.T) {
	for r := rune(0x4E00); r <= 0x9FFF; r++ {
		if !unicode.Is(unicode.Han, r) || unicode.Is(unicode.Mn, r) {
			t.Fatalf("U+%04X: Han %v, Mn %v; isCJKUnified's shortcut would be wrong", r, unicode.Is(unicode.Han, r), unicode.Is(unicode.Mn, r))
		}
	}
}

// normalizeWhole is Normalize as it was before foldCase: the whole text through the case folder.
func normalizeWhole(text string) string {
	s := norm.NFKC.String(text)
	if isASCII(s) {
		return asciiLower(s)
	}
	s = cases.Fold().String(s)
	if hasMark(s) {
		s = stripMarks(s)
	}
	return s
}

func FuzzNormalize(f *testing.F) {
	for _, s := range []string{"Hello 世界", "ΣΑΣ Straße İstanbul", "Café 中文 ÉCOLE", "ǅ ﬁ ẞ Ⅻ ㍿", "abc", "", "混合MIXED文本ŉ"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := Normalize(s), normalizeWhole(s); got != want {
			t.Fatalf("Normalize(%q) = %q, want %q", s, got, want)
		}
	})
}
