package content

import (
	"net/url"
	"regexp"
	"strings"
)

// Platforms detected from links.
const (
	PlatformDouyin      = "douyin"
	PlatformXiaohongshu = "xiaohongshu"
	PlatformWeibo       = "weibo"
	PlatformBilibili    = "bilibili"
	PlatformKuaishou    = "kuaishou"
	PlatformWeb         = "web" // any other link
)

// platformHosts maps host names (and their subdomains) to platforms, short-link hosts included.
var platformHosts = []struct{ host, platform string }{
	{"douyin.com", PlatformDouyin},
	{"iesdouyin.com", PlatformDouyin},
	{"douyinvod.com", PlatformDouyin},
	{"xiaohongshu.com", PlatformXiaohongshu},
	{"xhslink.com", PlatformXiaohongshu},
	{"xhscdn.com", PlatformXiaohongshu},
	{"weibo.com", PlatformWeibo},
	{"weibo.cn", PlatformWeibo},
	{"t.cn", PlatformWeibo},
	{"bilibili.com", PlatformBilibili},
	{"b23.tv", PlatformBilibili},
	{"bili2233.cn", PlatformBilibili},
	{"kuaishou.com", PlatformKuaishou},
	{"chenzhongtech.com", PlatformKuaishou},
}

// DetectPlatform names the platform of a link from its host: douyin, xiaohongshu, weibo, bilibili
// (short links such as v.douyin.com, xhslink.com, t.cn and b23.tv included), kuaishou, else web.
func DetectPlatform(link string) string {
	u, err := url.Parse(strings.TrimSpace(link))
	if err != nil || u.Host == "" {
		return PlatformWeb
	}
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	for _, ph := range platformHosts {
		if host == ph.host || strings.HasSuffix(host, "."+ph.host) {
			return ph.platform
		}
	}
	return PlatformWeb
}

var urlRe = regexp.MustCompile(`https?://[^\s"'<>，。！？、；：“”‘’（）【】《》]+`)

// ExtractURL finds the link in s: s itself when it is one, else the first http(s) URL inside
// share text such as "复制打开抖音 https://v.douyin.com/abc/ ...". A bare host ("www.douyin.com/x")
// gets https://. Empty when there is none.
func ExtractURL(s string) string {
	s = strings.TrimSpace(s)
	if m := urlRe.FindString(s); m != "" {
		return strings.TrimRight(m, ".,;:!?)")
	}
	if !strings.ContainsAny(s, " \t\n") && strings.Contains(s, ".") && !strings.Contains(s, "://") {
		if u, err := url.Parse("https://" + s); err == nil && strings.Contains(u.Hostname(), ".") {
			return u.String()
		}
	}
	return ""
}
