package parse

import (
	"archive/zip"
	"bytes"
	"compress/zlib"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/reelforge/reelforge/internal/testtool"
	"github.com/reelforge/reelforge/sdk/errcode"
)

func mustText(t *testing.T, name string, data []byte) string {
	t.Helper()
	s, err := Text(name, data)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return s
}

func TestFormats(t *testing.T) {
	if s := mustText(t, "a.TXT", []byte("\xEF\xBB\xBFhello 世界\n")); s != "hello 世界" {
		t.Errorf("txt %q", s)
	}
	if s := mustText(t, "a.md", []byte("# T\n\nbody")); s != "# T\n\nbody" {
		t.Errorf("md %q", s)
	}
	s := mustText(t, "a.json", []byte(`{"brand":{"name":"Reelforge","colors":["teal","black"]},"n":3}`))
	for _, w := range []string{"brand.name: Reelforge", "brand.colors: teal", "brand.colors: black", "n: 3"} {
		if !strings.Contains(s, w) {
			t.Errorf("json %q lacks %q", s, w)
		}
	}
	s = mustText(t, "a.csv", []byte("platform,max_length\nDouyin,15 min\nTikTok,10 min\n"))
	if !strings.Contains(s, "platform: Douyin\nmax_length: 15 min") || !strings.Contains(s, "platform: TikTok") {
		t.Errorf("csv %q", s)
	}
	s = mustText(t, "a.html", []byte(`<html><head><title>Rules</title><style>p{}</style><script>var x=1</script></head>
		<body><h2>Section</h2><p>Visible <b>text</b>.</p><noscript>no</noscript></body></html>`))
	if !strings.Contains(s, "Rules") || !strings.Contains(s, "## Section") || !strings.Contains(s, "Visible text") ||
		strings.Contains(s, "var x") || strings.Contains(s, "p{}") {
		t.Errorf("html %q", s)
	}
}

func TestUnsupported(t *testing.T) {
	_, err := Text("virus.exe", []byte("MZ"))
	if !errcode.Is(err, errcode.Validation) || !strings.Contains(errcode.As(err).Message(), `".exe"`) {
		t.Fatalf("err %v", err)
	}
	if _, err := Text("a.pdf", []byte("not a pdf")); !errcode.Is(err, errcode.Validation) {
		t.Fatalf("bad pdf: %v", err)
	}
	if _, err := Text("a.docx", []byte("PK junk")); !errcode.Is(err, errcode.Validation) {
		t.Fatalf("bad docx: %v", err)
	}
}

func docx(t testing.TB, body string) []byte {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, _ := zw.Create("word/document.xml")
	fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>%s</w:body></w:document>`, body)
	zw.Close()
	return buf.Bytes()
}

func TestDocx(t *testing.T) {
	data := docx(t, `<w:p><w:pPr><w:pStyle w:val="Heading1"/></w:pPr><w:r><w:t>Title</w:t></w:r></w:p>`+
		`<w:p><w:r><w:t>Hello </w:t></w:r><w:r><w:t>world</w:t></w:r></w:p>`+
		`<w:tbl><w:tr><w:tc><w:p><w:r><w:t>品牌色</w:t></w:r></w:p></w:tc></w:tr></w:tbl>`)
	if s := mustText(t, "a.docx", data); s != "# Title\n\nHello world\n\n品牌色" {
		t.Fatalf("docx %q", s)
	}
}

// minimalPDF builds a one-page PDF with an uncompressed content stream and a correct xref.
func minimalPDF(text string) []byte {
	content := fmt.Sprintf("BT /F1 12 Tf 72 720 Td (%s) Tj ET", text)
	objs := []string{
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>",
		fmt.Sprintf("<< /Length %d >>\nstream\n%s\nendstream", len(content), content),
		"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
	}
	var b bytes.Buffer
	b.WriteString("%PDF-1.4\n")
	offs := make([]int, len(objs))
	for i, o := range objs {
		offs[i] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", i+1, o)
	}
	x := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(objs)+1)
	for _, o := range offs {
		fmt.Fprintf(&b, "%010d 00000 n \n", o)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(objs)+1, x)
	return b.Bytes()
}

func TestPDF(t *testing.T) {
	data := minimalPDF("Hello PDF world")
	s, err := pdfFallback(data)
	if err != nil || !strings.Contains(s, "Hello PDF world") {
		t.Fatalf("fallback %q %v", s, err)
	}
	testtool.Need(t, "pdftotext")
	if s := mustText(t, "a.pdf", data); !strings.Contains(s, "Hello PDF world") {
		t.Fatalf("pdftotext %q", s)
	}
}

func FuzzText(f *testing.F) {
	f.Add("a.json", []byte(`{"a":[1,{"b":null}]}`))
	f.Add("a.csv", []byte("a,b\n1,\"2\n"))
	f.Add("a.html", []byte("<p>x<script>y</script>"))
	f.Add("a.docx", docx(f, `<w:p><w:r><w:t>x</w:t></w:r></w:p>`))
	f.Add("a.txt", []byte{0xFF, 0xFE, 'a', 0})
	f.Fuzz(func(t *testing.T, name string, data []byte) {
		if strings.HasSuffix(strings.ToLower(name), ".pdf") {
			name = "x.txt" // pdftotext is exercised by FuzzPDFFallback without a process per input
		}
		s, err := Text(name, data)
		if err != nil && errcode.As(err) == nil {
			t.Fatalf("error without code: %v", err)
		}
		_ = s
	})
}

func FuzzPDFFallback(f *testing.F) {
	f.Add(minimalPDF("x"))
	f.Add([]byte("%PDF-1.4 << /Filter /FlateDecode >> stream\nxx endstream (a\\101) Tj"))
	f.Fuzz(func(t *testing.T, data []byte) {
		pdfFallback(data)
	})
}

// A stream header inside a stream's data is data: its text is taken once, with the stream's.
func TestPDFStreamHeaderInData(t *testing.T) {
	data := []byte("%PDF-1.4\n1 0 obj\n<< /Length 60 >>\nstream\nBT (outer) Tj ET\n<< /Length 9 >>\nstream\nBT (inner) Tj ET\nendstream\nendobj\n")
	s, err := pdfFallback(data)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(s, "outer") != 1 || strings.Count(s, "inner") != 1 {
		t.Fatalf("text %q, want outer and inner once each", s)
	}
}

// The streams of one file inflate to at most the budget together; the text of the streams that
// fit is kept.
func TestPDFInflateBudget(t *testing.T) {
	flate := func(content string) string {
		var z bytes.Buffer
		w := zlib.NewWriter(&z)
		w.Write([]byte(content))
		w.Close()
		return fmt.Sprintf("<< /Length %d /Filter /FlateDecode >>\nstream\n%s\nendstream\n", z.Len(), z.Bytes())
	}
	first := "BT (first) Tj ET" + strings.Repeat(" ", 2000)
	data := []byte("%PDF-1.4\n" + flate(first) + flate("BT (second) Tj ET"))
	if s, _ := extractPDF(data, inflateBudget); !strings.Contains(s, "first") || !strings.Contains(s, "second") {
		t.Fatalf("whole budget: text %q, want both streams'", s)
	}
	s, _ := extractPDF(data, int64(len(first)))
	if !strings.Contains(s, "first") || strings.Contains(s, "second") {
		t.Fatalf("budget of the first stream: text %q, want the first stream's only", s)
	}
}

// zipOf builds a zip archive of the named entries; a size of n writes n bytes of c.
func zipOf(t *testing.T, entries map[string]int, c byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for name, n := range entries {
		w, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		chunk := bytes.Repeat([]byte{c}, 1<<20)
		for left := n; left > 0; left -= len(chunk) {
			if _, err := w.Write(chunk[:min(left, len(chunk))]); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// Archives over a cap are refused with a VALIDATION_ERROR saying which, without inflating them.
func TestDocxBombs(t *testing.T) {
	t.Parallel()
	many := map[string]int{"word/document.xml": 10}
	for i := range MaxArchiveEntries + 1 {
		many[fmt.Sprintf("f%d", i)] = 0
	}
	tests := map[string]struct {
		data []byte
		want string
	}{
		"inflates past the cap":     {zipOf(t, map[string]int{"word/document.xml": MaxInflated + 1}, ' '), "MB allowed"},
		"inflates a thousand times": {zipOf(t, map[string]int{"word/document.xml": 8 << 20}, ' '), "times its stored size"},
		"too many entries":          {zipOf(t, many, 'a'), "files, more than"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := Text("bomb.docx", tc.data)
			if e := errcode.As(err); e == nil || e.Code != errcode.Validation || !strings.Contains(e.Message(), tc.want) {
				t.Errorf("Text(bomb.docx) = %v, want VALIDATION_ERROR containing %q", err, tc.want)
			}
		})
	}
}

// An entry that declares a small size and inflates more is cut off with an error, not read whole.
func TestCappedReader(t *testing.T) {
	t.Parallel()
	r := &cappedReader{rc: io.NopCloser(strings.NewReader(strings.Repeat("x", 100))), left: 10, err: fmt.Errorf("over")}
	b, err := io.ReadAll(r)
	if err == nil || err.Error() != "over" || len(b) > 10 {
		t.Errorf("ReadAll(capped at 10 of 100) = %d bytes, %v; want at most 10 and the cap's error", len(b), err)
	}
}
