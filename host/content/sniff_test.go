package content

import (
	"encoding/binary"
	"testing"
)

func wavHead() []byte {
	b := []byte("RIFF\x00\x00\x00\x00WAVEfmt ")
	return append(b, make([]byte, 40)...)
}

func TestSniff(t *testing.T) {
	t.Parallel()
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
	mp4 := append([]byte{0, 0, 0, 0x18}, []byte("ftypisom\x00\x00\x02\x00isomiso2")...)
	m4a := append([]byte{0, 0, 0, 0x18}, []byte("ftypM4A \x00\x00\x02\x00")...)
	binary.BigEndian.PutUint32(mp4, 0x18)
	tests := map[string]struct {
		in       []byte
		wantType string
		wantOK   bool
	}{
		"png":        {png, "image", true},
		"jpeg":       {[]byte("\xff\xd8\xff\xe0\x00\x10JFIF\x00"), "image", true},
		"gif":        {[]byte("GIF89a\x01\x00"), "image", true},
		"wav":        {wavHead(), "audio", true},
		"mp3 id3":    {[]byte("ID3\x03\x00\x00\x00\x00\x00\x00"), "audio", true},
		"mp3 frame":  {[]byte{0xFF, 0xFB, 0x90, 0x64, 0, 0, 0, 0}, "audio", true},
		"mp4":        {mp4, "video", true},
		"m4a":        {m4a, "audio", true},
		"webm":       {[]byte("\x1A\x45\xDF\xA3\x01\x00\x00\x00\x00\x00\x00\x1f\x42\x86\x81\x01\x42\xf7\x81\x01\x42\xf2\x81\x04\x42\xf3\x81\x08\x42\x82\x84webm"), "video", true},
		"text":       {[]byte("hello, this is plain text"), "", false},
		"html":       {[]byte("<html><body>x</body></html>"), "", false},
		"svg":        {[]byte(`<svg xmlns="http://www.w3.org/2000/svg"></svg>`), "", false},
		"zip":        {[]byte("PK\x03\x04\x14\x00"), "", false},
		"executable": {[]byte("\x7fELF\x02\x01\x01"), "", false},
	}
	for name, tc := range tests {
		m, ok := Sniff(tc.in)
		if ok != tc.wantOK || m.FileType != tc.wantType {
			t.Errorf("Sniff(%s) = %+v, %v; want %q, %v", name, m, ok, tc.wantType, tc.wantOK)
		}
	}
}

func TestDeclaredClass(t *testing.T) {
	t.Parallel()
	tests := []struct{ ct, name, want string }{
		{"image/png", "a.png", "image"},
		{"audio/wav", "a.wav", "audio"},
		{"application/octet-stream", "clip.mp4", "video"},
		{"", "song.MP3", "audio"},
		{"", "noext", ""},
		{"text/plain", "a.png", "other:text/plain"},
		{"application/octet-stream", "", ""},
	}
	for _, tc := range tests {
		if got := declaredClass(tc.ct, tc.name); got != tc.want {
			t.Errorf("declaredClass(%q, %q) = %q, want %q", tc.ct, tc.name, got, tc.want)
		}
	}
}

// TestSniffGenerated: a run's caption files are known by their signature under their own
// extension only; anything else is what Sniff says.
func TestSniffGenerated(t *testing.T) {
	t.Parallel()
	vtt := []byte("WEBVTT\n\n1\n00:00:00.000 --> 00:00:01.000\nHi\n")
	srt := []byte("1\n00:00:00,000 --> 00:00:01,000\nHi\n")
	tests := []struct {
		head     []byte
		key      string
		wantType string
		wantOK   bool
	}{
		{vtt, "assets/u/captions/j.vtt", "captions", true},
		{append([]byte("\xEF\xBB\xBF"), vtt...), "assets/u/captions/j.vtt", "captions", true},
		{srt, "assets/u/captions/j.srt", "captions", true},
		{vtt, "assets/u/captions/j.srt", "", false},
		{srt, "assets/u/captions/j.vtt", "", false},
		{[]byte("WEBVTTX\n"), "assets/u/captions/j.vtt", "", false},
		{[]byte("<html>"), "assets/u/captions/j.vtt", "", false},
		{wavHead(), "assets/u/speech/j.wav", "audio", true},
	}
	for _, tc := range tests {
		m, ok := SniffGenerated(tc.head, tc.key)
		if ok != tc.wantOK || m.FileType != tc.wantType {
			t.Errorf("SniffGenerated(%q, %s) = %+v, %v; want %q, %v", tc.head, tc.key, m, ok, tc.wantType, tc.wantOK)
		}
	}
}
