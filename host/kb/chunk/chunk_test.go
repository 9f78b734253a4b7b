package chunk

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/reelforge/reelforge/sdk/errcode"
)

func sentences(n int, sentence string) string {
	var b strings.Builder
	for b.Len() < n*4 && utf8.RuneCountInString(b.String()) < n {
		b.WriteString(sentence)
	}
	return string([]rune(b.String())[:n])
}

func TestLongParagraph(t *testing.T) {
	en := sentences(5000, "The quick brown fox jumps over the lazy dog near the river bank. ")
	zh := sentences(5000, "短视频平台的规则要求创作者保持原创，并且不得搬运他人内容。")
	for _, text := range []string{en, zh} {
		got := len(Split(text, Options{Size: 1000, Overlap: 180}))
		if got < 5 || got > 8 {
			t.Errorf("1000/180: %d chunks", got)
		}
		got = len(Split(text, Options{Size: 500, Overlap: 0}))
		if got < 9 || got > 16 {
			t.Errorf("500/0: %d chunks", got)
		}
	}
	// No spaces, no sentence ends: hard cuts.
	flat := strings.Repeat("字", 5000)
	if got := len(Split(flat, Default())); got < 5 || got > 8 {
		t.Errorf("flat: %d chunks", got)
	}
}

func TestHeadingsAndParagraphs(t *testing.T) {
	text := "intro line\n\n# Rules\nFirst rule.\n\nSecond rule.\n\n## 规则\n内容一。\n\n内容二。\n"
	cs := Split(text, Default())
	if len(cs) != 3 {
		t.Fatalf("%d chunks: %+v", len(cs), cs)
	}
	if cs[0].Heading != "" || cs[0].Text != "intro line" {
		t.Errorf("chunk 0: %+v", cs[0])
	}
	if cs[1].Heading != "Rules" || cs[1].Text != "# Rules\nFirst rule.\n\nSecond rule." {
		t.Errorf("chunk 1: %+v", cs[1])
	}
	if cs[2].Heading != "规则" || !strings.HasSuffix(cs[2].Text, "内容二。") {
		t.Errorf("chunk 2: %+v", cs[2])
	}
}

func TestPacking(t *testing.T) {
	p := strings.Repeat("word ", 50) // 250 runes
	text := strings.Join([]string{p, p, p, p, p, p}, "\n\n")
	cs := Split(text, Default())
	if len(cs) != 2 {
		t.Fatalf("%d chunks", len(cs))
	}
	for _, c := range cs {
		if c.Runes > 1000 {
			t.Fatalf("chunk of %d runes", c.Runes)
		}
	}
}

func TestValidate(t *testing.T) {
	if err := Default().Validate(); err != nil {
		t.Fatal(err)
	}
	for _, o := range []Options{{199, 0}, {4001, 0}, {1000, 501}, {1000, -1}} {
		err := o.Validate()
		if !errcode.Is(err, errcode.Validation) {
			t.Errorf("%+v: %v", o, err)
		}
		if d, _ := errcode.As(err).Details.([]errcode.FieldError); len(d) == 0 {
			t.Errorf("%+v: no field details", o)
		}
	}
}

func check(t *testing.T, text string, opt Options) {
	cs := Split(text, opt)
	rs := []rune(text)
	covered := make([]bool, len(rs))
	for i, c := range cs {
		if c.Index != i || c.Text == "" || !utf8.ValidString(c.Text) {
			t.Fatalf("chunk %d bad: %+v", i, c)
		}
		if n := utf8.RuneCountInString(c.Text); n > opt.Size || n != c.Runes || n != c.End-c.Start {
			t.Fatalf("chunk %d: %d runes, size %d, %+v", i, n, opt.Size, c)
		}
		if string(rs[c.Start:c.End]) != c.Text {
			t.Fatalf("chunk %d text is not the input at its offsets", i)
		}
		for k := c.Start; k < c.End; k++ {
			covered[k] = true
		}
	}
	for k, r := range rs {
		if !covered[k] && !unicode.IsSpace(r) {
			t.Fatalf("rune %d %q not covered", k, r)
		}
	}
}

func FuzzSplit(f *testing.F) {
	f.Add("# T\nhello world. 你好。\n\nsecond", 200, 50)
	f.Add(strings.Repeat("ab. ", 300), 200, 100)
	f.Add("\xff\xfe bad utf8 \xe4\xb8", 200, 0)
	f.Fuzz(func(t *testing.T, text string, size, overlap int) {
		if size < 1 || size > 5000 {
			size = 200 + (size%3800+3800)%3800
		}
		if overlap < 0 || overlap > size/2 {
			overlap = (overlap%(size/2+1) + size/2 + 1) % (size/2 + 1)
		}
		check(t, text, Options{Size: size, Overlap: overlap})
	})
}

func TestCoverageLong(t *testing.T) {
	check(t, sentences(12345, "Alpha beta gamma! 中文句子。 "), Options{Size: 300, Overlap: 150})
	check(t, strings.Repeat("x", 3000)+"\n\n# h\n"+strings.Repeat("y ", 2000), Options{Size: 200, Overlap: 0})
}
