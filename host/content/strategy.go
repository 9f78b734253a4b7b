package content

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/reelforge/reelforge/host/kb/llm"
	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/sdk/errcode"
)

// Answer is one diagnosis answer; a bare string has no question.
type Answer struct {
	Question string `json:"question"`
	Answer   string `json:"answer"`
}

// Pillar is a content pillar of the strategy.
type Pillar struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	WorkflowID  string `json:"workflow_id"`
}

// Cadence is how often to publish.
type Cadence struct {
	PostsPerWeek int      `json:"posts_per_week"`
	BestTimes    []string `json:"best_times"`
	Description  string   `json:"description"`
}

// Report is the diagnosis report.
type Report struct {
	Summary         string   `json:"summary"`
	Niche           string   `json:"niche"`
	Audience        string   `json:"audience"`
	Positioning     string   `json:"positioning"`
	Goal            string   `json:"goal"`
	Platforms       []string `json:"platforms"`
	ContentPillars  []Pillar `json:"content_pillars"`
	Cadence         Cadence  `json:"cadence"`
	Recommendations []string `json:"recommendations"`
	Answers         []Answer `json:"answers"`
	Source          string   `json:"source"`                // template or model
	Note            string   `json:"note,omitempty"`        // why the report is a template, when it is
	Assumptions     []string `json:"assumptions,omitempty"` // what the blueprint assumed that the answers did not say

	planPlatform string // the blueprint's platform: the first of Platforms, else the assumed one
	planPPW      int    // the blueprint's posts a week: Cadence.PostsPerWeek, else the assumed one
}

// NoModel is what a report or rewrite made from templates says (no language model configured).
const NoModel = "no language model: template output"

// BlueprintDay is one dated strategy task of the 30-day plan.
type BlueprintDay struct {
	Date       string `json:"date"` // YYYY-MM-DD
	Day        int    `json:"day"`  // 1 to 30
	WorkflowID string `json:"workflow_id"`
	Summary    string `json:"summary"`
	Platform   string `json:"platform"`
	Priority   string `json:"priority"` // high, medium, low
	Pillar     string `json:"pillar,omitempty"`
}

// Blueprint is the 30-day plan stored on a project.
type Blueprint struct {
	Version      int            `json:"version"`
	GeneratedAt  string         `json:"generated_at"`
	StartDate    string         `json:"start_date"`
	EndDate      string         `json:"end_date"`
	Platform     string         `json:"platform"`
	PostsPerWeek int            `json:"posts_per_week"`
	Pillars      []string       `json:"pillars"`
	Days         []BlueprintDay `json:"days"`
	Source       string         `json:"source"`
}

// BlueprintDays is the length of the plan.
const BlueprintDays = 30

// Workflows a blueprint day can name (the scheduler can trigger them).
var Workflows = []string{"voiceover", "graphic", "video", "music", "live", "short_drama"}

// Diagnose turns answers into a report and a 30-day blueprint starting today: through the
// language model when configured (falling back to templates on any failure), else templates.
// With project set (already checked by the caller) the blueprint is stored on it.
func (s *Service) Diagnose(ctx context.Context, answers []Answer, project *store.Project) (*Report, *Blueprint, error) {
	clean := []Answer{}
	for i, a := range answers {
		a.Question, a.Answer = strings.TrimSpace(a.Question), strings.TrimSpace(a.Answer)
		if len([]rune(a.Question)) > 500 || len([]rune(a.Answer)) > 2000 {
			return nil, nil, errcode.Invalid(fmt.Sprintf("answers[%d]", i), "question must be at most 500 and answer at most 2000 characters")
		}
		if a.Answer != "" {
			clean = append(clean, a)
		}
	}
	if len(clean) == 0 {
		return nil, nil, errcode.Invalid("answers", "needs at least one non-empty answer")
	}
	if len(clean) > 50 {
		return nil, nil, errcode.Invalid("answers", "at most 50 answers")
	}
	rep := templateReport(clean)
	if s.llm != nil {
		s.modelReport(ctx, clean, rep)
	}
	bp := buildBlueprint(rep, s.now().UTC())
	if project != nil {
		raw, err := json.Marshal(bp)
		if err != nil {
			return nil, nil, fmt.Errorf("content: encode blueprint: %w", err)
		}
		err = store.InTx(ctx, s.st, func(tx Store) error {
			if _, err := tx.UpdateProject(ctx, store.UpdateProjectParams{ID: project.ID, Blueprint: raw}); err != nil {
				return err
			}
			if s.syncBP != nil {
				return s.syncBP(ctx, tx, project.ID, raw)
			}
			return nil
		})
		if err != nil {
			return nil, nil, err
		}
	}
	return rep, bp, nil
}

var (
	reQuestionAudience = regexp.MustCompile(`(?i)audience|who |viewer|follower|target|受众|用户|人群|粉丝|观众`)
	reQuestionPlatform = regexp.MustCompile(`(?i)platform|channel|where|平台|渠道`)
	reQuestionCadence  = regexp.MustCompile(`(?i)often|frequency|cadence|how many|per week|频率|多久|更新|几次|几条`)
	reQuestionGoal     = regexp.MustCompile(`(?i)goal|aim|objective|want to achieve|目标|目的`)
	reQuestionNiche    = regexp.MustCompile(`(?i)niche|topic|field|industry|what .*(do|make|create)|about|领域|行业|内容|定位|赛道`)
	reAudience         = regexp.MustCompile(`(?i)\baged?\b|\d+\s*[-–~到至]\s*\d+\s*(岁|years?)|years old|students?|workers?|parents?|moms?|mothers?|professionals?|beginners?|women|men\b|岁|学生|白领|宝妈|上班族|女性|男性|年轻人`)
	reGoal             = regexp.MustCompile(`(?i)grow|followers|sell|sales|brand|leads|revenue|monetiz|traffic|awareness|涨粉|变现|带货|品牌|引流|销量`)
	// A count and its period: "3 posts a week", "three videos per week", "twice weekly", "2 a day".
	reCadenceNum = regexp.MustCompile(`(?i)\b(\d+|one|two|three|four|five|six|seven|once|twice)\b\s*(?:[-–~]\s*\d+\s*)?(?:(?:new\s+)?(?:videos?|posts?|times?|clips?|episodes?|uploads?|pieces?)\s*)?(?:a|per|each|every|/)?\s*(weekly|week|wk|daily|day)\b`)
	// 每周能更新3次, 每周三条, 一周2更, 每天1条: a period, at most a few characters, then a count.
	reCadenceZH = regexp.MustCompile(`(?:每|一)(周|星期|礼拜|天|日)[^\d一二三四五六七八九十两\n。，,]{0,6}(\d+|[一二三四五六七八九十两])?`)
	reDaily     = regexp.MustCompile(`(?i)\bdaily\b|every ?day|每天|每日|日更`)
	// What a creator says before the niche itself: "I run a cooking channel about", "我是做…的".
	reNichePrefix = regexp.MustCompile(`(?i)^(?:i\s*(?:'m| am)\s+(?:a|an)\s+|i\s+(?:run|have|make|do|create|post|share)\s+(?:a|an|some)?\s*|my\s+(?:channel|account|content)\s+is\s+(?:about\s+)?|我(?:是|在|主要)?(?:做|分享|拍|运营)?(?:一个)?)`)
	reNicheAbout  = regexp.MustCompile(`(?i)\b(?:about|on|covering|focused on)\s+(.+)$`)
	reNicheSuffix = regexp.MustCompile(`(?:的)?(?:博主|账号|频道|内容|创作者|up主|UP主)$|(?i)\s+(?:creator|channel|account|videos?|content)$`)
)

var wordNum = map[string]int{"one": 1, "once": 1, "two": 2, "twice": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
	"一": 1, "两": 2, "二": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9, "十": 10}

var platformWords = []struct {
	re       *regexp.Regexp
	platform string
}{
	{regexp.MustCompile(`(?i)douyin|抖音|tiktok`), PlatformDouyin},
	{regexp.MustCompile(`(?i)xiaohongshu|小红书|rednote`), PlatformXiaohongshu},
	{regexp.MustCompile(`(?i)bilibili|b站|哔哩`), PlatformBilibili},
	{regexp.MustCompile(`(?i)weibo|微博`), PlatformWeibo},
	{regexp.MustCompile(`(?i)kuaishou|快手`), PlatformKuaishou},
	{regexp.MustCompile(`(?i)youtube|油管`), "youtube"},
	{regexp.MustCompile(`(?i)instagram|\bins\b|\breels\b`), "instagram"},
}

// postsPerWeek reads a publishing cadence from text; 0 when none is said (never a guess).
func postsPerWeek(text string) int {
	count := func(s string) int {
		if n, err := strconv.Atoi(s); err == nil {
			return n
		}
		return wordNum[strings.ToLower(s)]
	}
	if m := reCadenceZH.FindStringSubmatch(text); m != nil {
		n := 1 // 每周更新: once a week
		if m[2] != "" {
			n = count(m[2])
		}
		if m[1] == "天" || m[1] == "日" {
			n *= 7
		}
		if n > 0 {
			return min(n, 14)
		}
	}
	if m := reCadenceNum.FindStringSubmatch(text); m != nil {
		n := count(m[1])
		if p := strings.ToLower(m[2]); p == "day" || p == "daily" {
			n *= 7
		}
		if n > 0 {
			return min(n, 14)
		}
	}
	if reDaily.MatchString(text) {
		return 7
	}
	return 0
}

// Besides the niche, one sentence often says the cadence, the platforms and the audience: "I make
// home coffee videos for beginners on douyin, 3 times a week". nicheOf cuts those out before it
// reads the niche, or "on douyin, 3 times a week" would be taken for what the videos are about.
var (
	// Where the videos go ("on douyin", "on TikTok and Bilibili", "在抖音"), built from
	// platformWords; a platform named otherwise ("YouTube growth tips") may be the niche itself.
	reOnPlatforms = func() *regexp.Regexp {
		var names []string
		for _, pw := range platformWords {
			names = append(names, "(?:"+pw.re.String()+")")
		}
		p := "(?:" + strings.Join(names, "|") + ")"
		return regexp.MustCompile(`(?i)\s*(?:\b(?:on|at)\s+|在)` + p + `(?:\s*(?:and|&|,|，|和|、)\s*` + p + `)*`)
	}()
	// A closing "for <audience>" ("for beginners", "for busy parents").
	reForAudience = regexp.MustCompile(`(?i)\s+for\s+([^,，;；]+)$`)
)

// nicheOf is the niche an answer names, without what the creator says around it ("I run a cooking
// channel about quick vegan dinners" is "quick vegan dinners") nor the cadence, platforms and
// audience it says too; the audience it names that way ("videos for beginners") is returned too.
func nicheOf(answer string) (niche, audience string) {
	s := strings.TrimSpace(strings.TrimRight(strings.TrimSpace(answer), ".。!！"))
	s = reOnPlatforms.ReplaceAllString(reCadenceNum.ReplaceAllString(s, ""), "")
	s = strings.TrimRight(strings.TrimSpace(s), ",，;； ")
	if m := reForAudience.FindStringSubmatchIndex(s); m != nil && reAudience.MatchString(s[m[2]:m[3]]) {
		audience, s = strings.TrimSpace(s[m[2]:m[3]]), s[:m[0]]
	}
	if m := reNicheAbout.FindStringSubmatch(s); m != nil {
		s = m[1]
	} else {
		s = reNichePrefix.ReplaceAllString(s, "")
	}
	s = strings.TrimSpace(reNicheSuffix.ReplaceAllString(strings.TrimSpace(s), ""))
	if s == "" {
		return strings.TrimSpace(answer), audience
	}
	return s, audience
}

func templateReport(answers []Answer) *Report {
	var all []string
	for _, a := range answers {
		all = append(all, a.Answer)
	}
	text := strings.Join(all, "\n")
	zh := mostlyChinese(text)
	used := map[int]bool{}
	pick := func(qre, are *regexp.Regexp) string {
		for i, a := range answers {
			if !used[i] && a.Question != "" && qre.MatchString(a.Question) {
				used[i] = true
				return a.Answer
			}
		}
		if are == nil {
			return ""
		}
		for i, a := range answers {
			if !used[i] && are.MatchString(a.Answer) {
				used[i] = true
				return a.Answer
			}
		}
		return ""
	}
	r := &Report{Answers: answers, Source: "template", Platforms: []string{}}
	cadenceAns := pick(reQuestionCadence, reCadenceNum)
	if cadenceAns == "" {
		cadenceAns = pick(reQuestionCadence, reCadenceZH)
	}
	if cadenceAns == "" {
		cadenceAns = pick(reQuestionCadence, reDaily)
	}
	r.Audience = pick(reQuestionAudience, reAudience)
	r.Goal = pick(reQuestionGoal, reGoal)
	platformAns := pick(reQuestionPlatform, nil)
	for _, pw := range platformWords {
		if pw.re.MatchString(platformAns + "\n" + text) {
			r.Platforms = append(r.Platforms, pw.platform)
		}
	}
	for i, a := range answers { // a short answer that is only a platform name is used up
		if !used[i] && len([]rune(a.Answer)) <= 20 {
			for _, pw := range platformWords {
				if pw.re.MatchString(a.Answer) {
					used[i] = true
				}
			}
		}
	}
	niche := pick(reQuestionNiche, nil)
	if niche == "" {
		for i, a := range answers {
			if !used[i] {
				used[i] = true
				niche = a.Answer
				break
			}
		}
	}
	if niche == "" {
		niche = answers[0].Answer
	}
	var forAudience string
	r.Niche, forAudience = nicheOf(niche)
	if r.Audience == "" { // no answer of its own, but the niche's sentence names one
		r.Audience = forAudience
	}
	audience, goal := r.Audience, r.Goal
	if audience == "" {
		audience = map[bool]string{false: "viewers interested in " + r.Niche, true: "对" + r.Niche + "感兴趣的用户"}[zh]
	}
	if goal == "" {
		goal = map[bool]string{false: "grow an engaged following", true: "积累精准粉丝"}[zh]
		r.Goal = goal
	}
	ppw := postsPerWeek(cadenceAns)
	if ppw == 0 {
		ppw = postsPerWeek(text)
	}
	// What the answers did not say stays unset in the report (0 posts a week, no platforms); the
	// blueprint plans with a stated assumption instead.
	r.Cadence = Cadence{PostsPerWeek: ppw, BestTimes: []string{"12:00-13:00", "19:00-22:00"}}
	planPPW, platform := ppw, "douyin"
	if planPPW == 0 {
		planPPW = 3
		r.Assumptions = append(r.Assumptions, map[bool]string{false: "posting frequency not given: the blueprint assumes 3 posts a week",
			true: "未给出更新频率：日程按每周3条安排"}[zh])
	}
	if len(r.Platforms) > 0 {
		platform = r.Platforms[0]
	} else {
		r.Assumptions = append(r.Assumptions, map[bool]string{false: "platform not given: the blueprint plans for douyin",
			true: "未给出平台：日程按抖音安排"}[zh])
	}
	r.planPlatform, r.planPPW = platform, planPPW
	r.ContentPillars = pillarsFor(r.Niche, zh)
	if zh {
		r.Audience = audience
		r.Positioning = fmt.Sprintf("面向%s，专注%s：在%s上用稳定的系列内容%s。", audience, r.Niche, platformName(platform, zh), goal)
		r.Cadence.Description = fmt.Sprintf("每周发布%d条，固定时间发布，每周复盘一次数据。", planPPW)
		r.Recommendations = []string{"前三秒直接给出结果或冲突", "每条视频只讲一个观点，结尾给出行动指引",
			"把表现最好的选题做成系列", "每周复盘完播率、互动率和涨粉数据"}
		r.Summary = fmt.Sprintf("定位：%s。受众：%s。主平台：%s，每周%d条，围绕%d个内容支柱。", r.Niche, audience, platformName(platform, zh), planPPW, len(r.ContentPillars))
	} else {
		r.Audience = audience
		r.Positioning = fmt.Sprintf("Content about %s for %s: a steady series on %s to %s.", r.Niche, audience, platformName(platform, zh), strings.ToLower(goal))
		r.Cadence.Description = fmt.Sprintf("%d posts a week at fixed times, reviewed weekly.", planPPW)
		r.Recommendations = []string{"Show the payoff or the conflict in the first three seconds",
			"One idea per video, ending with a clear call to action", "Turn the best-performing topic into a series",
			"Review completion rate, engagement and follower growth every week"}
		r.Summary = fmt.Sprintf("Niche: %s. Audience: %s. Main platform: %s, %d posts a week across %d content pillars.",
			r.Niche, audience, platformName(platform, zh), planPPW, len(r.ContentPillars))
	}
	r.Note = NoModel
	return r
}

// mostlyChinese reports whether text has at least as many Han characters as Latin words, so a
// report follows the language most of the answers are in.
func mostlyChinese(text string) bool {
	han, words, inWord := 0, 0, false
	for _, r := range text {
		switch {
		case r >= 0x4E00 && r <= 0x9FFF:
			han++
			inWord = false
		case (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z'):
			if !inWord {
				words++
			}
			inWord = true
		default:
			inWord = false
		}
	}
	return han > 0 && han >= words
}

// platformName is how a platform is named in the report's prose.
func platformName(p string, zh bool) string {
	names := map[string][2]string{PlatformDouyin: {"Douyin", "抖音"}, PlatformXiaohongshu: {"Xiaohongshu", "小红书"},
		PlatformBilibili: {"Bilibili", "B站"}, PlatformWeibo: {"Weibo", "微博"}, PlatformKuaishou: {"Kuaishou", "快手"},
		"youtube": {"YouTube", "YouTube"}, "instagram": {"Instagram", "Instagram"}}
	if n, ok := names[p]; ok {
		if zh {
			return n[1]
		}
		return n[0]
	}
	return p
}

var nicheWorkflows = []struct {
	re        *regexp.Regexp
	workflows []string
}{
	{regexp.MustCompile(`(?i)music|song|sing|音乐|唱`), []string{"music", "video", "live"}},
	{regexp.MustCompile(`(?i)drama|story|comedy|skit|剧|故事|搞笑`), []string{"short_drama", "video", "voiceover"}},
	{regexp.MustCompile(`(?i)sell|shop|store|e-?commerce|product|带货|电商|好物|店`), []string{"live", "video", "graphic"}},
	{regexp.MustCompile(`(?i)teach|learn|education|tips|knowledge|finance|tech|教|知识|学习|干货|理财|科技`), []string{"voiceover", "graphic", "video"}},
	{regexp.MustCompile(`(?i)food|cook|recipe|travel|vlog|fitness|beauty|fashion|美食|做饭|旅行|健身|美妆|穿搭`), []string{"video", "voiceover", "graphic"}},
}

func pillarsFor(niche string, zh bool) []Pillar {
	wfs := []string{"video", "voiceover", "graphic"}
	for _, nw := range nicheWorkflows {
		if nw.re.MatchString(niche) {
			wfs = nw.workflows
			break
		}
	}
	if zh {
		return []Pillar{
			{"干货教程", "围绕" + niche + "的实用方法和步骤", wfs[0]},
			{"真实经历", niche + "中的亲身经历、幕后与踩坑", wfs[1]},
			{"互动话题", "回应评论、问答和热点讨论", wfs[2]},
		}
	}
	return []Pillar{
		{"How-to", "Practical steps and tips on " + niche, wfs[0]},
		{"Behind the scenes", "Personal stories, process and lessons from " + niche, wfs[1]},
		{"Community", "Answers to comments, Q&A and timely topics", wfs[2]},
	}
}

// postingDays spreads n posts over the 7 days of a week (day indexes 0 to 6).
func postingDays(n int) map[int]bool {
	out := map[int]bool{}
	if n >= 7 {
		for i := 0; i < 7; i++ {
			out[i] = true
		}
		return out
	}
	for i := 0; i < n; i++ {
		out[i*7/n] = true
	}
	return out
}

func buildBlueprint(r *Report, now time.Time) *Blueprint {
	start := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	platform := r.planPlatform
	zh := hasHan(r.Niche + r.Audience)
	bp := &Blueprint{Version: 1, GeneratedAt: now.Format(time.RFC3339), StartDate: start.Format("2006-01-02"),
		EndDate: start.AddDate(0, 0, BlueprintDays-1).Format("2006-01-02"), Platform: platform,
		PostsPerWeek: r.planPPW, Source: r.Source, Days: []BlueprintDay{}}
	for _, p := range r.ContentPillars {
		bp.Pillars = append(bp.Pillars, p.Name)
	}
	posting := postingDays(r.planPPW)
	post, engage := 0, 0
	perPillar := make([]int, len(r.ContentPillars)) // posts of each pillar so far
	lang := 0
	if zh {
		lang = 1
	}
	for i := 0; i < BlueprintDays; i++ {
		date := start.AddDate(0, 0, i)
		d := BlueprintDay{Date: date.Format("2006-01-02"), Day: i + 1, Platform: platform}
		if posting[i%7] {
			k := post % len(r.ContentPillars)
			p := r.ContentPillars[k]
			post++
			d.WorkflowID, d.Pillar = p.WorkflowID, p.Name
			d.Priority = "medium"
			if i < 7 || post%len(r.ContentPillars) == 1 {
				d.Priority = "high"
			}
			// Each post of a pillar takes the pillar's next angle, so the month does not repeat
			// one summary per pillar; the summary is the run's brief (the scheduler sends it).
			angles := postAngles[k%len(postAngles)][lang]
			angle := fmt.Sprintf(angles[perPillar[k]%len(angles)], r.Niche)
			perPillar[k]++
			// The audience is named unless the angle already names it: an audience of
			// "beginners" under "… for beginners" would read "for beginners, for beginners".
			switch {
			case strings.Contains(strings.ToLower(angle), strings.ToLower(r.Audience)):
				d.Summary = angle + map[bool]string{false: ".", true: "。"}[zh]
			case zh:
				d.Summary = fmt.Sprintf("%s（面向%s）", angle, r.Audience)
			default:
				d.Summary = fmt.Sprintf("%s, for %s.", angle, r.Audience)
			}
		} else {
			d.WorkflowID, d.Priority, d.Pillar = "graphic", "low", ""
			d.Summary = engagementDays[lang][engage%len(engagementDays[lang])]
			engage++
		}
		bp.Days = append(bp.Days, d)
	}
	return bp
}

// postAngles are the angles of the posts of each pillar (in the order of the template's pillars:
// how-to, behind the scenes, community), English then Chinese; %s is the niche. A model's pillars
// take them by position too.
var postAngles = [][2][]string{
	{{"A step-by-step guide to %s for beginners", "One common mistake with %s, and how to fix it",
		"A quick %s tip viewers can try today", "What you really need for %s, and what to skip",
		"A 60-second %s routine from start to finish", "Three small changes that make %s easier"},
		{"%s新手一步步教程", "%s常见错误和改法", "一个马上能用的%s小技巧", "做%s真正需要什么、可以省掉什么",
			"60秒走完一遍%s的完整流程", "让%s更轻松的三个小改变"}},
	{{"A personal story from %s: what went wrong and what you learned", "A day of %s, behind the scenes",
		"A before-and-after of %s", "The one lesson %s taught you",
		"Your %s setup, and why it looks the way it does", "A %s attempt that failed, shown honestly"},
		{"我和%s的一个真实故事：踩过的坑和收获", "%s的一天：幕后花絮", "%s前后对比", "做%s学到的一课",
			"我的%s装备和布置，以及为什么这样安排", "一次失败的%s尝试，真实记录"}},
	{{"Answer the three questions viewers ask most about %s", "A myth about %s from the comments, and the truth",
		"Start a 7-day %s challenge with viewers", "Reply on video to the best comment about %s",
		"Viewers' %s results from the challenge", "A live Q&A on %s"},
		{"回答大家问得最多的三个%s问题", "评论区里关于%s的误区和真相", "发起7天%s打卡挑战", "用视频回复一条关于%s的精彩评论",
			"展示粉丝的%s挑战成果", "%s直播答疑"}},
}

// engagementDays are the days between posts, in turn, English then Chinese.
var engagementDays = [2][]string{
	{"Engagement day: a graphic teaser of the next post, and replies to comments",
		"Engagement day: a poll on what to cover next",
		"Engagement day: a quote card from the week's best comment",
		"Engagement day: a behind-the-scenes photo with a question for viewers",
		"Engagement day: review the week's numbers and collect ideas for the next posts"},
	{"互动日：发布下一条的封面预告，回复评论",
		"互动日：发起投票，让粉丝选下一期的选题",
		"互动日：把本周最好的一条评论做成图文",
		"互动日：发一张幕后照片，向粉丝提一个问题",
		"互动日：复盘本周数据，收集下一批选题"},
}

// modelReport asks the language model to refine the template report; on any failure the template
// stays as it is.
func (s *Service) modelReport(ctx context.Context, answers []Answer, r *Report) {
	var b strings.Builder
	for i, a := range answers {
		if a.Question != "" {
			fmt.Fprintf(&b, "%d. Q: %s\n   A: %s\n", i+1, a.Question, a.Answer)
		} else {
			fmt.Fprintf(&b, "%d. %s\n", i+1, a.Answer)
		}
	}
	msgs := []llm.Message{
		{Role: "system", Content: "You are a short-video content strategist. Reply with one JSON object only, no prose: " +
			`{"summary": string, "niche": string, "audience": string, "positioning": string, "goal": string, ` +
			`"content_pillars": [{"name": string, "description": string, "workflow_id": one of voiceover|graphic|video|music|live|short_drama}], ` +
			`"recommendations": [string]}. Answer in the language of the creator's answers.`},
		{Role: "user", Content: "The creator's diagnosis answers:\n" + b.String()},
	}
	ctx, cancel := context.WithTimeout(ctx, 45*time.Second)
	defer cancel()
	out, err := s.llm.Chat(ctx, s.model, msgs)
	if err != nil {
		s.log.Warn("diagnosis: language model failed, using templates", "err", err.Error())
		r.Note = "language model failed (" + clip(err.Error(), 200) + "): template output"
		return
	}
	var m Report
	if err := json.Unmarshal([]byte(jsonObject(out)), &m); err != nil {
		s.log.Warn("diagnosis: model answer is not JSON, using templates")
		r.Note = "language model answer was not the report asked for: template output"
		return
	}
	set := func(dst *string, v string) {
		if v = strings.TrimSpace(v); v != "" {
			*dst = clip(v, 2000)
		}
	}
	set(&r.Summary, m.Summary)
	set(&r.Niche, m.Niche)
	set(&r.Audience, m.Audience)
	set(&r.Positioning, m.Positioning)
	set(&r.Goal, m.Goal)
	var pillars []Pillar
	for _, p := range m.ContentPillars {
		if strings.TrimSpace(p.Name) == "" {
			continue
		}
		if !validWorkflow(p.WorkflowID) {
			p.WorkflowID = "video"
		}
		pillars = append(pillars, Pillar{Name: clip(p.Name, 100), Description: clip(p.Description, 500), WorkflowID: p.WorkflowID})
	}
	if len(pillars) > 0 {
		r.ContentPillars = pillars[:min(len(pillars), 6)]
	}
	if len(m.Recommendations) > 0 {
		r.Recommendations = m.Recommendations[:min(len(m.Recommendations), 10)]
	}
	r.Source, r.Note = "model", ""
}

func validWorkflow(id string) bool {
	for _, w := range Workflows {
		if w == id {
			return true
		}
	}
	return false
}

// jsonObject cuts the outermost {...} out of a model answer (which may be fenced).
func jsonObject(s string) string {
	i, j := strings.Index(s, "{"), strings.LastIndex(s, "}")
	if i < 0 || j < i {
		return s
	}
	return s[i : j+1]
}

// CalendarDay is one date of the blueprint calendar.
type CalendarDay struct {
	Date    string         `json:"date"`
	Weekday string         `json:"weekday"`
	Tasks   []BlueprintDay `json:"tasks"`
}

// Calendar groups a stored blueprint's days by date, in date order; empty for no blueprint or
// one without days.
func Calendar(raw json.RawMessage) []CalendarDay {
	out := []CalendarDay{}
	if len(raw) == 0 || string(raw) == "null" {
		return out
	}
	var bp struct {
		Days []BlueprintDay `json:"days"`
	}
	if err := json.Unmarshal(raw, &bp); err != nil {
		return out
	}
	byDate := map[string]*CalendarDay{}
	for _, d := range bp.Days {
		t, err := time.Parse("2006-01-02", d.Date)
		if err != nil {
			continue
		}
		cd := byDate[d.Date]
		if cd == nil {
			cd = &CalendarDay{Date: d.Date, Weekday: t.Weekday().String(), Tasks: []BlueprintDay{}}
			byDate[d.Date] = cd
		}
		cd.Tasks = append(cd.Tasks, d)
	}
	for _, cd := range byDate {
		out = append(out, *cd)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Date < out[j].Date })
	return out
}
