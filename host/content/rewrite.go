package content

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/reelforge/reelforge/host/kb/llm"
	"github.com/reelforge/reelforge/internal/sentence"
	"github.com/reelforge/reelforge/sdk/engine"
	"github.com/reelforge/reelforge/sdk/errcode"
)

// Styles are the rewrite styles.
var Styles = []string{"humorous", "professional", "emotional", "concise", "casual", "storytelling"}

var styleAliases = map[string]string{
	"funny": "humorous", "humor": "humorous", "幽默": "humorous", "搞笑": "humorous",
	"formal": "professional", "专业": "professional", "正式": "professional",
	"emotion": "emotional", "情感": "emotional", "煽情": "emotional", "走心": "emotional",
	"short": "concise", "brief": "concise", "简洁": "concise", "精简": "concise",
	"口语": "casual", "轻松": "casual", "friendly": "casual",
	"story": "storytelling", "narrative": "storytelling", "故事": "storytelling",
}

// NormalizeStyle maps a style name (or alias) to one of Styles; empty means professional.
func NormalizeStyle(style string) (string, error) {
	s := strings.ToLower(strings.TrimSpace(style))
	if s == "" {
		return "professional", nil
	}
	if a, ok := styleAliases[s]; ok {
		s = a
	}
	for _, v := range Styles {
		if v == s {
			return s, nil
		}
	}
	return "", errcode.Invalid("style", "must be one of "+strings.Join(Styles, ", "))
}

// Rewritten is a rewritten script (POST /api/strategy/rewrite's answer).
type Rewritten struct {
	Script string `json:"rewrittenScript"`
	Style  string `json:"style" doc:"the style used (an alias given is named by its style)"`
	Source string `json:"source" enum:"model,template"`
	Note   string `json:"note,omitempty" doc:"why the script is a template's, when it is"`
}

// Rewrite rewrites a script in a style: through the language model when configured, else by
// template rules (Source says which).
func (s *Service) Rewrite(ctx context.Context, content, style string) (*Rewritten, error) {
	content = strings.TrimSpace(content)
	if content == "" {
		return nil, errcode.Invalid("content", "is required")
	}
	if len([]rune(content)) > maxContentLen {
		return nil, errcode.Invalid("content", fmt.Sprintf("must be at most %d characters", maxContentLen))
	}
	usedStyle, err := NormalizeStyle(style)
	if err != nil {
		return nil, err
	}
	if s.llm != nil {
		ctx, cancel := context.WithTimeout(ctx, 45*time.Second)
		defer cancel()
		out, err := s.llm.Chat(ctx, s.model, []llm.Message{
			{Role: "system", Content: "You rewrite short-video scripts. Keep every fact, keep the language of the script, " +
				"and answer with the rewritten script only."},
			{Role: "user", Content: fmt.Sprintf("Style: %s\n\nScript:\n%s", usedStyle, content)},
		})
		if err == nil && strings.TrimSpace(out) != "" && !engine.Refused(out) {
			return &Rewritten{Script: strings.TrimSpace(out), Style: usedStyle, Source: "model"}, nil
		}
		if err != nil {
			s.log.Warn("rewrite: language model failed, using templates", "err", err.Error())
		}
	}
	return &Rewritten{Script: RewriteTemplate(content, usedStyle), Style: usedStyle, Source: "template",
		Note: RewriteNote(usedStyle)}, nil
}

var (
	fillersEN = regexp.MustCompile(`(?i)\b(really|very|just|basically|actually|literally|kind of|sort of|you know|i think|i guess|so,?)\s+`)
	fillersZH = regexp.MustCompile(`嗯|呃|那个|就是说|其实|然后呢|基本上`)
)

// sentences splits s into sentences (never inside a number, an address or an abbreviation);
// text without any is one sentence.
func sentences(s string) []string {
	out := sentence.Split(s, sentence.Ends)
	if len(out) == 0 {
		out = []string{strings.TrimSpace(s)}
	}
	return out
}

func dropFillers(s string) string {
	s = fillersEN.ReplaceAllString(s, "")
	s = fillersZH.ReplaceAllString(s, "")
	return strings.Join(strings.Fields(s), " ")
}

func capFirst(s string) string {
	r := []rune(s)
	if len(r) > 0 && r[0] >= 'a' && r[0] <= 'z' {
		r[0] -= 'a' - 'A'
	}
	return string(r)
}

// RewriteNote says what a template rewrite did: without a language model the script's own sentences
// are kept and only framed (or trimmed) by the style's fixed phrases.
func RewriteNote(style string) string {
	return NoModel + "; not rewritten to the " + style + " style: the script's own sentences, framed by the style's fixed phrases"
}

// RewriteTemplate is the rule-based rewrite used without a language model.
func RewriteTemplate(content, style string) string {
	zh := hasHan(content)
	ss := sentences(content)
	join := func(parts []string) string {
		if zh {
			return strings.Join(parts, "")
		}
		return strings.Join(parts, " ")
	}
	switch style {
	case "humorous":
		opening, aside, closing := "Okay, confession time: this is way easier than it looks.",
			"(Yes, really. No secret handshake required.)",
			"Side effects may include becoming everyone's favourite expert. You've been warned 😄"
		if zh {
			opening, aside, closing = "先说结论：这事比你想的简单多了。", "（真的，不骗你）", "学会了记得点赞，不然下次你又得回来找我 😄"
		}
		out := []string{opening}
		for i, x := range ss {
			out = append(out, x)
			if i == 0 {
				out = append(out, aside)
			}
		}
		return join(append(out, closing))
	case "professional":
		var lines []string
		if zh {
			lines = append(lines, "核心要点如下：")
		} else {
			lines = append(lines, "Here is the clear, step-by-step version:")
		}
		for i, x := range ss {
			lines = append(lines, fmt.Sprintf("%d. %s", i+1, capFirst(dropFillers(x))))
		}
		if zh {
			lines = append(lines, "总结：按以上步骤执行，即可稳定复现效果。")
		} else {
			lines = append(lines, "In short: follow these steps and you will get the same result every time.")
		}
		return strings.Join(lines, "\n")
	case "emotional":
		if zh {
			return join(append(append([]string{"这件事，我想认真地讲给你听。"}, ss...), "如果它对你有一点点帮助，就收藏起来，留给需要它的那一天 ❤️"))
		}
		return join(append(append([]string{"I want to share something that truly matters to me."}, ss...),
			"If this helped even a little, save it for the day you need it ❤️"))
	case "concise":
		var out []string
		for _, x := range ss {
			if x = dropFillers(x); x != "" {
				out = append(out, capFirst(x))
			}
			if len(out) == 3 {
				break
			}
		}
		return join(out)
	case "casual":
		if zh {
			return join(append(append([]string{"嘿，朋友们！"}, ss...), "就这么简单，试试看吧～"))
		}
		return join(append(append([]string{"Hey friends!"}, ss...), "That's it, give it a try!"))
	case "storytelling":
		if zh {
			return join(append(append([]string{"还记得我第一次尝试的时候吗？"}, ss...), "后来我才明白，最简单的方法往往最有效。"))
		}
		return join(append(append([]string{"Let me tell you how this started."}, ss...),
			"And that's when I realised the simplest way is often the best one."))
	}
	return content
}
