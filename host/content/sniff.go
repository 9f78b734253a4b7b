package content

import (
	"bytes"
	"mime"
	"net/http"
	"path"
	"regexp"
	"strings"

	"github.com/reelforge/reelforge/host/store"
)

// Media is what the bytes of a file say it is.
type Media struct {
	FileType string // image, video, audio (captions: SniffGenerated)
	MIME     string
	Ext      string // with the dot
}

// Sniff classifies a file from its first bytes (http.DetectContentType plus WAV, MP3, MP4/M4A
// and a few other signatures). ok is false for anything that is not image, video or audio.
func Sniff(head []byte) (m Media, ok bool) {
	switch {
	case len(head) >= 12 && bytes.Equal(head[:4], []byte("RIFF")) && bytes.Equal(head[8:12], []byte("WAVE")):
		return Media{store.AssetAudio, "audio/wav", ".wav"}, true
	case len(head) >= 12 && bytes.Equal(head[:4], []byte("RIFF")) && bytes.Equal(head[8:12], []byte("AVI ")):
		return Media{store.AssetVideo, "video/x-msvideo", ".avi"}, true
	case len(head) >= 12 && bytes.Equal(head[4:8], []byte("ftyp")):
		brand := string(head[8:12])
		switch {
		case strings.HasPrefix(brand, "M4A") || strings.HasPrefix(brand, "M4B"):
			return Media{store.AssetAudio, "audio/mp4", ".m4a"}, true
		case brand == "qt  ":
			return Media{store.AssetVideo, "video/quicktime", ".mov"}, true
		case strings.HasPrefix(brand, "heic") || strings.HasPrefix(brand, "heix") || strings.HasPrefix(brand, "mif1"):
			return Media{store.AssetImage, "image/heic", ".heic"}, true
		case strings.HasPrefix(brand, "avif"):
			return Media{store.AssetImage, "image/avif", ".avif"}, true
		}
		return Media{store.AssetVideo, "video/mp4", ".mp4"}, true
	case len(head) >= 3 && bytes.Equal(head[:3], []byte("ID3")):
		return Media{store.AssetAudio, "audio/mpeg", ".mp3"}, true
	case len(head) >= 2 && head[0] == 0xFF && (head[1]&0xE0) == 0xE0 && (head[1]&0x06) != 0 && (head[1]&0x18) != 0x08:
		// an MPEG audio frame sync: 11 set bits, a valid version and a layer
		return Media{store.AssetAudio, "audio/mpeg", ".mp3"}, true
	case len(head) >= 4 && bytes.Equal(head[:4], []byte("fLaC")):
		return Media{store.AssetAudio, "audio/flac", ".flac"}, true
	}
	ct, _, _ := mime.ParseMediaType(http.DetectContentType(head))
	switch ct {
	case "image/png":
		return Media{store.AssetImage, ct, ".png"}, true
	case "image/jpeg":
		return Media{store.AssetImage, ct, ".jpg"}, true
	case "image/gif":
		return Media{store.AssetImage, ct, ".gif"}, true
	case "image/webp":
		return Media{store.AssetImage, ct, ".webp"}, true
	case "image/bmp":
		return Media{store.AssetImage, ct, ".bmp"}, true
	case "video/webm":
		return Media{store.AssetVideo, ct, ".webm"}, true
	case "video/avi":
		return Media{store.AssetVideo, "video/x-msvideo", ".avi"}, true
	case "audio/aiff":
		return Media{store.AssetAudio, ct, ".aiff"}, true
	case "application/ogg", "audio/ogg":
		return Media{store.AssetAudio, "audio/ogg", ".ogg"}, true
	case "audio/wave":
		return Media{store.AssetAudio, "audio/wav", ".wav"}, true
	case "audio/mpeg":
		return Media{store.AssetAudio, ct, ".mp3"}, true
	case "video/mp4":
		return Media{store.AssetVideo, ct, ".mp4"}, true
	}
	return Media{}, false
}

// srtCue is how a SubRip file starts: a cue number, then its times.
var srtCue = regexp.MustCompile(`^\d+\r?\n\d{2}:\d{2}:\d{2},\d{3} --> \d{2}:\d{2}:\d{2},\d{3}`)

// SniffGenerated classifies a file a run made: what Sniff knows, and caption files (a WebVTT file by
// its signature, an SRT file by its first cue, each only under its own extension). Uploads never
// come here: a caption file is only ever a run's.
func SniffGenerated(head []byte, key string) (Media, bool) {
	if m, ok := Sniff(head); ok {
		return m, true
	}
	head = bytes.TrimPrefix(head, []byte("\xEF\xBB\xBF"))
	switch strings.ToLower(path.Ext(key)) {
	case ".vtt":
		if bytes.HasPrefix(head, []byte("WEBVTT")) && (len(head) == 6 || head[6] == '\n' || head[6] == '\r' || head[6] == ' ' || head[6] == '\t') {
			return Media{store.AssetCaptions, "text/vtt; charset=utf-8", ".vtt"}, true
		}
	case ".srt":
		if srtCue.Match(head) {
			return Media{store.AssetCaptions, "application/x-subrip; charset=utf-8", ".srt"}, true
		}
	}
	return Media{}, false
}

// declaredClass is the media class (image, video, audio) the client claims through its content
// type, or else its file name's extension; "" when it claims nothing specific.
func declaredClass(contentType, name string) string {
	ct, _, _ := mime.ParseMediaType(contentType)
	if c := mimeClass(ct); c != "" {
		return c
	}
	if ct != "" && ct != "application/octet-stream" && ct != "binary/octet-stream" {
		return "other:" + ct
	}
	if ext := strings.ToLower(path.Ext(strings.ReplaceAll(name, "\\", "/"))); ext != "" {
		return mimeClass(extMIME[ext])
	}
	return ""
}

func mimeClass(ct string) string {
	for _, c := range []string{store.AssetImage, store.AssetVideo, store.AssetAudio} {
		if strings.HasPrefix(ct, c+"/") {
			return c
		}
	}
	if ct == "application/ogg" {
		return store.AssetAudio
	}
	return ""
}

var extMIME = map[string]string{
	".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif", ".webp": "image/webp",
	".bmp": "image/bmp", ".heic": "image/heic", ".avif": "image/avif",
	".mp4": "video/mp4", ".mov": "video/quicktime", ".webm": "video/webm", ".avi": "video/x-msvideo", ".mkv": "video/x-matroska",
	".mp3": "audio/mpeg", ".wav": "audio/wav", ".m4a": "audio/mp4", ".aac": "audio/aac", ".ogg": "audio/ogg", ".flac": "audio/flac",
	".txt": "text/plain", ".html": "text/html", ".htm": "text/html", ".pdf": "application/pdf", ".exe": "application/octet-stream",
	".svg": "image/svg+xml",
}
