package generators

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/reelforge/reelforge/internal/netguard"
	"github.com/reelforge/reelforge/internal/proc"
	"github.com/reelforge/reelforge/sdk/errcode"
)

// Limits of page fetching for videoparse.
const (
	pageTimeout = 10 * time.Second
	pageMax     = 1 << 20
)

func (d *executor) videoparse(ctx context.Context, lj *localJob) (map[string]any, error) {
	ref := str(lj.payload, "url", "file_path", "video_url", "link")
	if ref == "" {
		return nil, errcode.Invalid("payload.url", "videoparse needs a url or a file_path")
	}
	if p := d.localFile(lj, ref); p != "" {
		info, err := d.probe(ctx, p)
		if err != nil {
			return nil, err
		}
		info["file_path"] = ref
		info["source"] = "ffprobe"
		return info, nil
	}
	u, err := url.Parse(ref)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, errcode.Invalid("payload.url", "must be an http(s) link or a file of yours")
	}
	return d.pageMeta(ctx, u)
}

// probe runs ffprobe on a local file: duration, size, container, and the first video and audio
// streams.
func (d *executor) probe(ctx context.Context, path string) (map[string]any, error) {
	if _, err := d.opts.LookPath("ffprobe"); err != nil {
		return nil, errcode.E("generators.videoparse", errcode.ExternalService,
			"ffprobe is not on PATH: install ffmpeg (Debian/Ubuntu: apt-get install ffmpeg)", err)
	}
	out, err := d.children.Output(proc.Command(ctx, "ffprobe", "-v", "error", "-print_format", "json", "-show_format", "-show_streams", path))
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, errcode.E("generators.videoparse", errcode.ExternalService, "ffprobe could not read the file", err)
	}
	var p struct {
		Format struct {
			FormatName string `json:"format_name"`
			Duration   string `json:"duration"`
			Size       string `json:"size"`
			BitRate    string `json:"bit_rate"`
		} `json:"format"`
		Streams []struct {
			CodecType string `json:"codec_type"`
			CodecName string `json:"codec_name"`
			Width     int    `json:"width"`
			Height    int    `json:"height"`
			Duration  string `json:"duration"`
		} `json:"streams"`
	}
	if err := json.Unmarshal(out, &p); err != nil {
		return nil, errcode.E("generators.videoparse", errcode.ExternalService, "ffprobe answered no JSON", err)
	}
	info := map[string]any{"format": p.Format.FormatName, "has_video": false, "has_audio": false}
	if f, err := strconv.ParseFloat(p.Format.Duration, 64); err == nil {
		info["duration"] = round(f)
	}
	if n, err := strconv.ParseInt(p.Format.Size, 10, 64); err == nil {
		info["file_size"] = n
	}
	for _, s := range p.Streams {
		switch s.CodecType {
		case "video":
			if info["has_video"] == false {
				info["has_video"], info["video_codec"], info["width"], info["height"] = true, s.CodecName, s.Width, s.Height
			}
		case "audio":
			if info["has_audio"] == false {
				info["has_audio"], info["audio_codec"] = true, s.CodecName
			}
		}
	}
	return info, nil
}

var (
	metaTag   = regexp.MustCompile(`(?is)<meta\s[^>]*>`)
	attr      = regexp.MustCompile(`(?is)([a-z:_-]+)\s*=\s*("([^"]*)"|'([^']*)'|([^\s"'>]+))`)
	titleTag  = regexp.MustCompile(`(?is)<title[^>]*>(.*?)</title>`)
	platforms = []struct{ host, name string }{
		{"douyin.com", "douyin"}, {"iesdouyin.com", "douyin"}, {"xiaohongshu.com", "xiaohongshu"}, {"xhslink.com", "xiaohongshu"},
		{"weibo.com", "weibo"}, {"weibo.cn", "weibo"}, {"bilibili.com", "bilibili"}, {"b23.tv", "bilibili"},
		{"youtube.com", "youtube"}, {"youtu.be", "youtube"}, {"tiktok.com", "tiktok"},
	}
)

// Platform names the platform of a link (douyin, xiaohongshu, weibo, bilibili, ...), or "web".
func Platform(link string) string {
	u, err := url.Parse(link)
	if err != nil {
		return "web"
	}
	host := strings.ToLower(u.Hostname())
	for _, p := range platforms {
		if host == p.host || strings.HasSuffix(host, "."+p.host) {
			return p.name
		}
	}
	return "web"
}

// pageMeta fetches a page (time-out, size cap, SSRF guard) and reads its own metadata.
func (d *executor) pageMeta(ctx context.Context, u *url.URL) (map[string]any, error) {
	ctx, cancel := context.WithTimeout(ctx, pageTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, errcode.E("generators.videoparse", errcode.Validation, "the link is not valid", err)
	}
	req.Header.Set("User-Agent", "Mozilla/5.0 (compatible; Reelforge link parser)")
	req.Header.Set("Accept", "text/html,application/xhtml+xml;q=0.9,*/*;q=0.5")
	res, err := d.pages.Do(req)
	if errors.Is(err, netguard.ErrRefused) {
		return nil, errcode.E("generators.videoparse", errcode.Validation,
			"the link points to an address that is not allowed (loopback, private or link-local)", err)
	}
	if err != nil {
		return nil, errcode.E("generators.videoparse", errcode.ExternalService, "the page could not be fetched", err)
	}
	defer res.Body.Close()
	if res.StatusCode < 200 || res.StatusCode > 299 {
		return nil, errcode.E("generators.videoparse", errcode.ExternalService, fmt.Sprintf("the page answered %d", res.StatusCode), nil)
	}
	out := map[string]any{"url": u.String(), "platform": Platform(u.String()), "source": "page_metadata"}
	ctype := res.Header.Get("Content-Type")
	if strings.HasPrefix(ctype, "video/") || strings.HasPrefix(ctype, "audio/") || strings.HasPrefix(ctype, "image/") {
		out["content_type"] = ctype
		if res.ContentLength > 0 {
			out["file_size"] = res.ContentLength
		}
		return out, nil
	}
	body, err := io.ReadAll(io.LimitReader(res.Body, pageMax))
	if err != nil {
		return nil, errcode.E("generators.videoparse", errcode.ExternalService, "the page could not be read", err)
	}
	meta := map[string]string{}
	for _, tag := range metaTag.FindAllString(string(body), 200) {
		var key, content string
		for _, a := range attr.FindAllStringSubmatch(tag, -1) {
			v := a[3] + a[4] + a[5]
			switch strings.ToLower(a[1]) {
			case "property", "name", "itemprop":
				key = strings.ToLower(v)
			case "content":
				content = v
			}
		}
		if key != "" && content != "" {
			if _, seen := meta[key]; !seen {
				meta[key] = strings.TrimSpace(html.UnescapeString(content))
			}
		}
	}
	title := first(meta, "og:title", "twitter:title")
	if title == "" {
		if m := titleTag.FindStringSubmatch(string(body)); m != nil {
			title = strings.Join(strings.Fields(html.UnescapeString(m[1])), " ")
		}
	}
	out["title"] = title
	out["description"] = first(meta, "og:description", "twitter:description", "description")
	if img := first(meta, "og:image", "twitter:image"); img != "" {
		if ref, err := u.Parse(img); err == nil {
			img = ref.String()
		}
		out["cover_url"] = img
	}
	if v := first(meta, "og:video", "og:video:url", "og:video:secure_url"); v != "" {
		out["video_url"] = v
	}
	if s := first(meta, "og:site_name"); s != "" {
		out["site_name"] = s
	}
	return out, nil
}

func first(m map[string]string, keys ...string) string {
	for _, k := range keys {
		if v := m[k]; v != "" {
			return v
		}
	}
	return ""
}
