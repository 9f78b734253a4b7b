// Package parse turns uploaded files into plain text for chunking: txt, md, json, csv, html, pdf
// and docx. The type is taken from the file name's extension; anything else is a
// VALIDATION_ERROR naming the type.
package parse

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/net/html"

	"github.com/reelforge/reelforge/internal/proc"
	"github.com/reelforge/reelforge/sdk/errcode"
)

// Types lists the supported extensions.
var Types = []string{".txt", ".md", ".json", ".csv", ".html", ".pdf", ".docx"}

// Supported reports whether filename's extension is supported.
func Supported(filename string) bool {
	ext := ext(filename)
	for _, t := range Types {
		if t == ext || ext == ".markdown" || ext == ".htm" {
			return true
		}
	}
	return false
}

// mimeTypes are the media types of the supported extensions.
var mimeTypes = map[string]string{
	".txt": "text/plain", ".md": "text/markdown", ".markdown": "text/markdown", ".json": "application/json",
	".csv": "text/csv", ".html": "text/html", ".htm": "text/html", ".pdf": "application/pdf",
	".docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
}

// MimeType is the media type a file is read as, from its extension ("" for an unsupported one).
func MimeType(filename string) string { return mimeTypes[ext(filename)] }

func ext(filename string) string { return strings.ToLower(filepath.Ext(filename)) }

// PDFTimeout bounds one pdftotext run.
var PDFTimeout = 60 * time.Second

// Text returns the plain text of a file. An unsupported extension is a VALIDATION_ERROR
// (`unsupported file type ".exe"`); a file that cannot be read is a VALIDATION_ERROR too. A file
// with no text gives "" and no error (the caller marks the document failed).
func Text(filename string, data []byte) (string, error) {
	const op = "parse.Text"
	e := ext(filename)
	var (
		s   string
		err error
	)
	switch e {
	case ".txt", ".md", ".markdown":
		s = decodeText(data)
	case ".json":
		s, err = jsonText(data)
	case ".csv":
		s, err = csvText(data)
	case ".html", ".htm":
		s, err = htmlText(data)
	case ".pdf":
		s, err = pdfText(data)
	case ".docx":
		// At most two archives inflate at once, so uploads at once cannot add up past the caps.
		archiveSlots <- struct{}{}
		s, err = docxText(data)
		<-archiveSlots
	default:
		name := e
		if name == "" {
			name = "(none)"
		}
		return "", errcode.E(op, errcode.Validation, fmt.Sprintf("unsupported file type %q", name), nil).
			WithDetails([]errcode.FieldError{{Field: "file", Problem: "unsupported file type " + name}})
	}
	if err != nil {
		if errcode.As(err) != nil {
			return "", err
		}
		return "", errcode.E(op, errcode.Validation, fmt.Sprintf("cannot read %s file", strings.TrimPrefix(e, ".")), err)
	}
	return strings.TrimSpace(strings.ToValidUTF8(s, "\uFFFD")), nil
}

// decodeText drops a UTF-8 BOM and decodes UTF-16 with a BOM.
func decodeText(b []byte) string {
	switch {
	case bytes.HasPrefix(b, []byte{0xEF, 0xBB, 0xBF}):
		b = b[3:]
	case len(b) >= 2 && (b[0] == 0xFF && b[1] == 0xFE || b[0] == 0xFE && b[1] == 0xFF):
		le := b[0] == 0xFF
		var sb strings.Builder
		for i := 2; i+1 < len(b); i += 2 {
			u := uint16(b[i])<<8 | uint16(b[i+1])
			if le {
				u = uint16(b[i+1])<<8 | uint16(b[i])
			}
			sb.WriteRune(rune(u)) // surrogate pairs: rare in documents, shown as U+FFFD
		}
		return sb.String()
	}
	return string(b)
}

func jsonText(data []byte) (string, error) {
	var v any
	dec := json.NewDecoder(bytes.NewReader([]byte(decodeText(data))))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return "", err
	}
	var b strings.Builder
	writeJSON(&b, "", v, 0)
	return b.String(), nil
}

// writeJSON writes values with their key paths: "key: value" lines, nested keys joined by dots.
func writeJSON(b *strings.Builder, path string, v any, depth int) {
	if depth > 64 {
		return
	}
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			p := k
			if path != "" {
				p = path + "." + k
			}
			writeJSON(b, p, x[k], depth+1)
		}
		if path == "" || len(x) > 0 {
			b.WriteString("\n")
		}
	case []any:
		for _, e := range x {
			writeJSON(b, path, e, depth+1)
		}
	case nil:
	default:
		if path != "" {
			b.WriteString(path)
			b.WriteString(": ")
		}
		fmt.Fprint(b, x)
		b.WriteString("\n")
	}
}

func csvText(data []byte) (string, error) {
	r := csv.NewReader(strings.NewReader(decodeText(data)))
	r.FieldsPerRecord = -1
	r.LazyQuotes = true
	header, err := r.Read()
	if err == io.EOF {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for {
		row, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", err
		}
		for i, v := range row {
			if strings.TrimSpace(v) == "" {
				continue
			}
			col := fmt.Sprintf("column %d", i+1)
			if i < len(header) && strings.TrimSpace(header[i]) != "" {
				col = strings.TrimSpace(header[i])
			}
			b.WriteString(col + ": " + v + "\n")
		}
		b.WriteString("\n")
	}
	if b.Len() == 0 { // a header-only file: keep its words
		return strings.Join(header, ", "), nil
	}
	return b.String(), nil
}

var blockTags = map[string]bool{"p": true, "div": true, "br": true, "li": true, "tr": true, "h1": true,
	"h2": true, "h3": true, "h4": true, "h5": true, "h6": true, "section": true, "article": true,
	"table": true, "ul": true, "ol": true, "blockquote": true, "pre": true, "title": true, "header": true,
	"footer": true, "td": true, "th": true, "dd": true, "dt": true}

func htmlText(data []byte) (string, error) {
	doc, err := html.Parse(bytes.NewReader(data))
	if err != nil {
		return "", err
	}
	var b strings.Builder
	var walk func(n *html.Node, depth int)
	walk = func(n *html.Node, depth int) {
		if depth > 512 {
			return
		}
		if n.Type == html.ElementNode {
			switch n.Data {
			case "script", "style", "noscript", "template", "svg", "head":
				if n.Data == "head" {
					for c := n.FirstChild; c != nil; c = c.NextSibling {
						if c.Type == html.ElementNode && c.Data == "title" {
							walk(c, depth+1)
						}
					}
				}
				return
			}
			if len(n.Data) == 2 && n.Data[0] == 'h' && n.Data[1] >= '1' && n.Data[1] <= '6' {
				b.WriteString("\n\n" + strings.Repeat("#", int(n.Data[1]-'0')) + " ")
			} else if blockTags[n.Data] {
				b.WriteString("\n")
			}
		}
		if n.Type == html.TextNode {
			t := strings.Join(strings.Fields(n.Data), " ")
			if t != "" {
				b.WriteString(t)
				b.WriteString(" ")
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c, depth+1)
		}
		if n.Type == html.ElementNode && blockTags[n.Data] {
			b.WriteString("\n")
		}
	}
	walk(doc, 0)
	// Tidy: trim lines, keep single blank lines between blocks.
	var out []string
	blank := false
	for _, l := range strings.Split(b.String(), "\n") {
		l = strings.TrimSpace(l)
		if l == "" {
			blank = len(out) > 0
			continue
		}
		if blank {
			out = append(out, "")
			blank = false
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n"), nil
}

// pdfText runs poppler's pdftotext when it is on PATH, else the small built-in extractor.
func pdfText(data []byte) (string, error) {
	if !bytes.HasPrefix(bytes.TrimLeft(data[:min(len(data), 1024)], "\x00\t\r\n "), []byte("%PDF")) {
		return "", fmt.Errorf("not a PDF file")
	}
	if path, err := exec.LookPath("pdftotext"); err == nil {
		s, err := popplerText(path, data)
		if err == nil {
			return s, nil
		}
	}
	return pdfFallback(data)
}

func popplerText(bin string, data []byte) (string, error) {
	f, err := os.CreateTemp("", "kb-*.pdf")
	if err != nil {
		return "", err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(data); err != nil {
		f.Close()
		return "", err
	}
	f.Close()
	ctx, cancel := context.WithTimeout(context.Background(), PDFTimeout)
	defer cancel()
	var out, stderr bytes.Buffer
	cmd := proc.Command(ctx, bin, "-enc", "UTF-8", "-q", f.Name(), "-") // dies with the host
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("pdftotext: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	// pdftotext separates pages by form feeds.
	s := strings.ReplaceAll(out.String(), "\f", "\n\n")
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	return s, nil
}

// Caps of archive-based formats (docx): a small file may inflate to gigabytes (a zip bomb), so
// an archive is read only within them, streaming, and refused past any of them.
const (
	// MaxArchiveEntries bounds the files an archive lists (a docx has a few dozen).
	MaxArchiveEntries = 2000
	// MaxInflated bounds the bytes one entry inflates to, read or declared (word/document.xml of
	// a 500-page report is about 10 MB).
	MaxInflated = 64 << 20
	// MaxRatio bounds how many times an entry of more than a megabyte inflates its stored size
	// (XML compresses about 10 to 30 times; bombs a thousand times and more).
	MaxRatio = 200
)

// archiveSlots bounds the archives inflating at once (each within MaxInflated).
var archiveSlots = make(chan struct{}, 2)

// openEntry opens the entry name of the zip archive in data within the caps above: the reader
// it gives fails once more than MaxInflated bytes came out, whatever the entry declared. The
// errors are VALIDATION_ERRORs that say which cap was hit.
func openEntry(data []byte, kind, name string) (io.ReadCloser, error) {
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, err
	}
	if len(zr.File) > MaxArchiveEntries {
		return nil, tooBig(kind, fmt.Sprintf("lists %d files, more than the %d allowed", len(zr.File), MaxArchiveEntries))
	}
	var f *zip.File
	for _, zf := range zr.File {
		if zf.Name == name {
			f = zf
		}
	}
	if f == nil {
		return nil, fmt.Errorf("no %s", name)
	}
	if f.UncompressedSize64 > MaxInflated {
		return nil, tooBig(kind, fmt.Sprintf("%s inflates to %d MB, more than the %d MB allowed", name, f.UncompressedSize64>>20, MaxInflated>>20))
	}
	if f.UncompressedSize64 > 1<<20 && f.UncompressedSize64 > MaxRatio*max(f.CompressedSize64, 1) {
		return nil, tooBig(kind, fmt.Sprintf("%s inflates %d times its stored size, more than the %d allowed", name,
			f.UncompressedSize64/max(f.CompressedSize64, 1), MaxRatio))
	}
	rc, err := f.Open()
	if err != nil {
		return nil, err
	}
	return &cappedReader{rc: rc, left: MaxInflated, err: tooBig(kind, fmt.Sprintf("%s inflates past the %d MB allowed", name, MaxInflated>>20))}, nil
}

// cappedReader fails with err once more than left bytes were read (LimitReader would stop
// silently and leave a cut document looking whole).
type cappedReader struct {
	rc   io.ReadCloser
	left int64
	err  error
}

func (r *cappedReader) Read(p []byte) (int, error) {
	if r.left < 0 {
		return 0, r.err
	}
	if int64(len(p)) > r.left+1 {
		p = p[:r.left+1]
	}
	n, err := r.rc.Read(p)
	r.left -= int64(n)
	if r.left < 0 {
		return 0, r.err
	}
	return n, err
}

func (r *cappedReader) Close() error { return r.rc.Close() }

func tooBig(kind, what string) error {
	return errcode.New(errcode.Validation, fmt.Sprintf("the %s file %s: refused (it may be a zip bomb)", kind, what))
}

// docxText reads the paragraphs of word/document.xml (text runs w:t, tabs and breaks), also
// inside tables, with Heading styles as Markdown headings, streaming within the archive caps.
func docxText(data []byte) (string, error) {
	rc, err := openEntry(data, "docx", "word/document.xml")
	if err != nil {
		return "", err
	}
	defer rc.Close()
	dec := xml.NewDecoder(rc)
	var b, para strings.Builder
	heading := 0
	inText := false
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			switch t.Name.Local {
			case "p":
				para.Reset()
				heading = 0
			case "pStyle":
				for _, a := range t.Attr {
					if a.Name.Local == "val" {
						v := strings.ToLower(a.Value)
						if strings.HasPrefix(v, "heading") && len(v) == 8 && v[7] >= '1' && v[7] <= '6' {
							heading = int(v[7] - '0')
						} else if v == "title" {
							heading = 1
						}
					}
				}
			case "t":
				inText = true
			case "tab":
				para.WriteString("\t")
			case "br", "cr":
				para.WriteString("\n")
			}
		case xml.EndElement:
			switch t.Name.Local {
			case "t":
				inText = false
			case "p":
				s := strings.TrimSpace(para.String())
				if s != "" {
					if heading > 0 {
						b.WriteString(strings.Repeat("#", heading) + " ")
					}
					b.WriteString(s)
					b.WriteString("\n\n")
				}
				para.Reset()
			}
		case xml.CharData:
			if inText {
				para.Write(t)
			}
		}
	}
	return b.String(), nil
}
