package clean_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/reelforge/reelforge/host/kb/clean"
)

func TestText(t *testing.T) {
	t.Parallel()
	tests := map[string]struct{ in, want string }{
		"headings and emphasis": {"## Pricing\n\nThe **starter** kit costs 2.40 dollars. See [our shop](https://shop.example/a.b).",
			"The starter kit costs 2.40 dollars. See our shop."},
		"list":         {"- Press the tofu\n- Fry it for 8 minutes\n1. Serve hot!", "Press the tofu.\nFry it for 8 minutes.\nServe hot!"},
		"chinese list": {"- 豆腐先压干\n- 每份 2.40 元", "豆腐先压干。\n每份 2.40 元。"},
		"table": {"| name | pay |\n| --- | --- |\n| OatBloom | 2.40 dollars a post |\n| Soyful | 3 dollars |",
			"name: OatBloom; pay: 2.40 dollars a post.\nname: Soyful; pay: 3 dollars."},
		"chinese table": {"| 版本 | 年付价格 |\n| --- | --- |\n| 创作者版 | 368 元/年 |", "版本：创作者版；年付价格：368 元/年。"},
		"csv": {"name,pay,channel\nOatBloom,2.40,douyin\nSoyful,3.10,bilibili",
			"name: OatBloom; pay: 2.40; channel: douyin.\nname: Soyful; pay: 3.10; channel: bilibili."},
		"prose with commas": {"We cook, film, and edit on Mondays, Tuesdays, and Fridays.\nThen we rest, eat, and sleep.",
			"We cook, film, and edit on Mondays, Tuesdays, and Fridays. Then we rest, eat, and sleep."},
		"html":           {"<p>Hello &amp; welcome.</p><script>x()</script>", "Hello & welcome."},
		"colour kept":    {"The accent colour is #1B2440 and `ai-badge-v3` is the badge.", "The accent colour is #1B2440 and ai-badge-v3 is the badge."},
		"snake case":     {"Set max_items_per_day to 3.", "Set max_items_per_day to 3."},
		"code fence":     {"Run it:\n```\nrm -rf /\n```\nDone.", "Run it:\nDone."},
		"chinese joined": {"锐锋的产品覆盖\n三个阶段。", "锐锋的产品覆盖三个阶段。"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tt.want, clean.Text(tt.in)); diff != "" {
				t.Errorf("Text(%q) (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}
