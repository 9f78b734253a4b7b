package node

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/reelforge/reelforge/internal/extract"
	"github.com/reelforge/reelforge/sdk/engine"
	"github.com/reelforge/reelforge/sdk/errcode"
)

// stepCtx is what a step's agent sees: its parameters, the run, and the outputs of the steps before
// it. It belongs to the step's goroutine.
type stepCtx struct {
	index    int
	step     engine.Step
	with     map[string]any
	req      *engine.RunRequest
	h        engine.Host
	deps     map[string]map[string]any // outputs of direct dependencies, by step id
	depOrder []string                  // direct dependencies in the order the step names them
	upstream []map[string]any          // outputs of every ancestor, in declaration order
	skipped  []any                     // steps skipped so far: {step_id, reason}
}

// result is what an agent produced.
type result struct {
	outputs map[string]any
	usage   bool // tokens and cost are known
	tokens  int64
	cost    float64
}

// agent is one kind of step. inputs says what the step works from (recorded in the trace); run does
// the work and may be called again for a retry.
type agent struct {
	inputs func(sc *stepCtx) map[string]any
	run    func(ctx context.Context, sc *stepCtx, in map[string]any) (*result, error)
}

// agents are the agents of the node engine, by the name a step's `agent` uses. human_input is run
// by the scheduler itself (it pauses the run) and is listed so that it is known.
var agents = map[string]agent{
	"script_writer": {inputs: scriptInputs, run: writeScript},
	"rewriter":      {inputs: rewriteInputs, run: rewrite},
	"kb_lookup":     {inputs: lookupInputs, run: lookup},
	"answer":        {inputs: answerInputs, run: answer},
	"generator":     {inputs: generatorInputs, run: generate},
	"assemble":      {inputs: assembleInputs, run: assemble},
	"human_input":   {inputs: func(*stepCtx) map[string]any { return map[string]any{} }, run: nil},
}

// Agents returns the names of the agents the node engine knows, sorted.
func Agents() []string { return slices.Sorted(maps.Keys(agents)) }

// input returns the first non-empty string among the run inputs keys.
func (sc *stepCtx) input(keys ...string) string {
	for _, k := range keys {
		if s := asString(sc.req.Inputs[k]); s != "" {
			return s
		}
	}
	return ""
}

// param returns the string parameter key of the step's `with`.
func (sc *stepCtx) param(key string) string { return asString(sc.with[key]) }

// latest returns the value of key in the outputs of the nearest ancestor that has it (later
// declared steps first), looking also inside a generator's `result`.
func (sc *stepCtx) latest(key string) any {
	if m := sc.producer(key); m != nil {
		return m[key]
	}
	return nil
}

// producer is the outputs (or the job result within them) of the nearest step that set key, or
// nil: what else that step said of the same thing (a video's duration and size beside its URL).
func (sc *stepCtx) producer(key string) map[string]any {
	for i := len(sc.upstream) - 1; i >= 0; i-- {
		out := sc.upstream[i]
		if v, ok := out[key]; ok && v != nil && v != "" {
			return out
		}
		if res, ok := out["result"].(map[string]any); ok {
			if v, ok := res[key]; ok && v != nil && v != "" {
				return res
			}
		}
	}
	return nil
}

// latestString is latest for string values.
func (sc *stepCtx) latestString(keys ...string) string {
	for _, k := range keys {
		if s := asString(sc.latest(k)); s != "" {
			return s
		}
	}
	return ""
}

// hits returns the knowledge-base hits of the nearest ancestor that looked some up.
func (sc *stepCtx) hits() []map[string]any {
	raw, _ := sc.latest("hits").([]any)
	out := make([]map[string]any, 0, len(raw))
	for _, h := range raw {
		if m, ok := h.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

func asString(v any) string {
	switch s := v.(type) {
	case string:
		return strings.TrimSpace(s)
	case float64:
		return strconv.FormatFloat(s, 'f', -1, 64)
	case int:
		return strconv.Itoa(s)
	case json.Number:
		return s.String()
	}
	return ""
}

func asNumber(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case float32:
		return float64(n), true
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(n), 64)
		return f, err == nil
	}
	return 0, false
}

// generateText asks the host's model. It returns the answer, or nil and why the step falls back
// to its template: NoModel when no model is configured, or the reason the call failed or gave
// nothing usable (a slow answer past the step's deadline, an error, an empty answer, a refusal).
func generateText(ctx context.Context, sc *stepCtx, system, prompt string, maxTokens int) (*engine.GenerateResult, string) {
	res, err := sc.h.Generate(ctx, &engine.GenerateRequest{System: system, Prompt: prompt, MaxTokens: maxTokens})
	switch {
	case err != nil:
		msg := err.Error()
		if e := errcode.As(err); e != nil {
			msg = e.Message()
		}
		return nil, "language model failed (" + clip(msg, 200) + "): template output"
	case res == nil || !res.OK:
		return nil, NoModel
	case strings.TrimSpace(res.Text) == "":
		return nil, "language model gave an empty answer: template output"
	case engine.Refused(res.Text):
		return nil, "language model refused (" + clip(res.Text, 120) + "): template output"
	}
	return res, ""
}

// templateResult marks outputs written without the model: source "template" and, in note, why.
func templateResult(out map[string]any, why string) *result {
	out["source"] = "template"
	out["note"] = why
	return &result{outputs: out}
}

// toolError keeps the catalogue code of a host error and makes any other an AGENT_TOOL_FAILED error
// (retried).
func toolError(op, msg string, err error) error {
	if errcode.Of(err) != errcode.Unknown {
		return err
	}
	return errcode.E(op, errcode.AgentToolFailed, msg, err)
}

// modelResult wraps a model answer as the result of an agent.
func modelResult(out map[string]any, g *engine.GenerateResult) *result {
	out["source"] = "model"
	if g.Model != "" {
		out["model"] = g.Model
	}
	return &result{outputs: out, usage: true, tokens: g.TokensUsed, cost: g.CostUSD}
}

// ---------------------------------------------------------------- script_writer

func scriptInputs(sc *stepCtx) map[string]any {
	in := map[string]any{
		"format":   formatOf(sc),
		"topic":    sc.input("topic", "title", "question", "query"),
		"summary":  sc.input("summary", "content", "text", "description"),
		"platform": sc.input("platform"),
		"style":    firstNonEmpty(sc.param("style"), sc.input("style")),
		"language": sc.input("language"),
	}
	if c := sc.input("characters"); c != "" {
		in["characters"] = c
	}
	if d, ok := asNumber(sc.req.Inputs["duration"]); ok && d > 0 {
		in["duration"] = d
	}
	if d, ok := asNumber(sc.req.Inputs["days"]); ok && d > 0 {
		in["days"] = d
	}
	if p := sc.input("prompt"); p != "" {
		in["prompt"] = p
	}
	if accept, _ := sc.with["accept_script"].(bool); accept {
		if s := sc.input("script", "text"); s != "" {
			in["script"] = s
		}
	}
	if notes, cites := knowledgeOf(sc, 3); len(notes) > 0 {
		in["knowledge"], in["citations"] = notes, cites
	}
	if m := materialOf(sc.req.Inputs[engine.InputMediaDescriptions]); len(m) > 0 {
		in["material"] = m
	}
	return in
}

// materialOf reads the host's descriptions of the run's material (engine.InputMediaDescriptions)
// as the script's material input: {name, description} items, at most maxMaterialNotes, each
// description cut to maxNoteLength characters.
func materialOf(v any) []any {
	list, _ := v.([]any)
	var out []any
	for _, e := range list {
		m, ok := e.(map[string]any)
		if !ok {
			continue
		}
		d := strings.TrimSpace(asString(m["description"]))
		if d == "" {
			continue
		}
		name := firstNonEmpty(asString(m["name"]), asString(m["ref"]), "material")
		out = append(out, map[string]any{"name": clip(name, 120), "description": clip(d, maxNoteLength)})
		if len(out) == maxMaterialNotes {
			break
		}
	}
	return out
}

// maxMaterialNotes and maxNoteLength bound what a run's material descriptions add to a script
// step's inputs (and its trace).
const (
	maxMaterialNotes = 20
	maxNoteLength    = 1000
)

// knowledgeOf returns up to n knowledge-base passages of the nearest lookup, each cut to whole
// sentences, and their citations ({number, source, document}, numbered as [#n]).
func knowledgeOf(sc *stepCtx, n int) (notes, cites []any) {
	return notesOf(sc.hits(), n)
}

// notesOf is knowledgeOf for the given hits.
func notesOf(hits []map[string]any, n int) (notes, cites []any) {
	for _, h := range hits {
		if t := wholeSentences(asString(h["text"]), 400); t != "" {
			notes = append(notes, t)
			cites = append(cites, map[string]any{"number": len(notes), "chunk_id": h["chunk_id"], "source": h["source"], "document": h["document"]})
		}
		if len(notes) == n {
			break
		}
	}
	return notes, cites
}

// wholeSentences is the leading sentences of text that fit in n runes (at least the first one,
// clipped only if it alone is longer), so a number or a sentence is never cut in the middle.
func wholeSentences(text string, n int) string {
	var b strings.Builder
	for i, s := range splitSentences(text) {
		if i > 0 && b.Len() > 0 && len([]rune(b.String()))+1+len([]rune(s)) > n {
			break
		}
		if b.Len() > 0 {
			b.WriteString(" ")
		}
		b.WriteString(s)
		if i == 0 && len([]rune(s)) > n {
			return clip(s, n)
		}
	}
	return b.String()
}

func formatOf(sc *stepCtx) string {
	if f := sc.param("format"); f != "" {
		return f
	}
	return "video"
}

func writeScript(ctx context.Context, sc *stepCtx, in map[string]any) (*result, error) {
	b := newBrief(in)
	if s := asString(in["script"]); s != "" {
		return &result{outputs: map[string]any{"script": s, "title": b.title(), "format": b.format, "source": "input",
			"note": "the creator's script, used as is"}}, nil
	}
	searched := ""
	if _, ok := in["knowledge"]; !ok && b.format != "music" {
		searched = searchKnowledge(ctx, sc, b, in)
	}
	g, why := generateText(ctx, sc, scriptSystem, b.modelPrompt()+knowledgePrompt(in)+materialPrompt(in), 900)
	if g != nil {
		out := map[string]any{"script": strings.TrimSpace(g.Text), "title": b.title(), "format": b.format}
		if b.format == "music" {
			out["prompt"] = b.musicPrompt()
		}
		if c, ok := in["citations"]; ok {
			out["citations"] = c
		}
		return modelResult(out, g), nil
	}
	b = newBrief(in) // with what the search found
	out := b.template()
	if n := templateNote(out); n != "" {
		out["template"] = n
	}
	if searched != "" {
		out["knowledge_search"] = searched
	}
	if est, ok := out["estimated_seconds"].(int); ok && est*10 < b.duration*7 {
		why += fmt.Sprintf("; about %d of the %d seconds asked: the brief and the knowledge base gave no more to say", est, b.duration)
	}
	return templateResult(out, why), nil
}

// searchKnowledge looks the brief's subject up in the knowledge base, through the host (scoped to
// the run's owner and project), when no earlier step did: the passages go into in as a lookup
// step's would. It returns what the trace should say of it; a failed search is said, not fatal.
func searchKnowledge(ctx context.Context, sc *stepCtx, b brief, in map[string]any) string {
	q := strings.TrimSpace(readShape(b.topic, b.zh()).subject)
	if q == "" {
		q = b.topic
	}
	hits, err := sc.h.Search(ctx, &engine.SearchRequest{UserID: sc.req.User.UserID, ProjectID: sc.req.Project.ProjectID, Query: q, TopK: 5})
	if err != nil {
		msg := err.Error()
		if e := errcode.As(err); e != nil {
			msg = e.Message()
		}
		return "knowledge base not searched (" + clip(msg, 200) + ")"
	}
	ms := make([]map[string]any, 0, len(hits))
	for _, h := range hits {
		ms = append(ms, map[string]any{"chunk_id": h.ChunkID, "text": h.ChunkText, "source": h.SourceName, "document": h.Document})
	}
	notes, cites := notesOf(ms, 3)
	if len(notes) == 0 {
		return fmt.Sprintf("knowledge base searched for %q: nothing found", q)
	}
	in["knowledge"], in["citations"] = notes, cites
	return fmt.Sprintf("knowledge base searched for %q: passages found: %d", q, len(notes))
}

// ---------------------------------------------------------------- rewriter

func rewriteInputs(sc *stepCtx) map[string]any {
	script, mode := sc.latestString("script"), "rewrite"
	if script == "" {
		// Parsed content (videoparse) or the run's own text: the step repurposes it into a script.
		script = firstNonEmpty(sc.latestString("text", "transcript", "description", "content"),
			sc.input("script", "content", "text", "summary", "topic"))
		mode = "repurpose"
	}
	in := map[string]any{
		"script":   script,
		"mode":     mode,
		"style":    firstNonEmpty(sc.param("style"), sc.latestString("style"), sc.input("style"), "concise"),
		"platform": sc.input("platform"),
	}
	for _, k := range []string{"topic", "language"} {
		if v := sc.input(k); v != "" {
			in[k] = v
		}
	}
	if d, ok := asNumber(sc.req.Inputs["duration"]); ok && d > 0 {
		in["duration"] = d
	}
	if sc.latestString("source") == "input" {
		in["given"] = true // the creator's own script
	}
	if n := sc.latestString("notes", "feedback", "comment"); n != "" {
		in["notes"] = n
	}
	if notes, cites := knowledgeOf(sc, 3); len(notes) > 0 {
		in["knowledge"], in["citations"] = notes, cites
	}
	return in
}

func rewrite(ctx context.Context, sc *stepCtx, in map[string]any) (*result, error) {
	script, style, notes := asString(in["script"]), asString(in["style"]), asString(in["notes"])
	if script == "" {
		return nil, errcode.New(errcode.Validation, "nothing to rewrite: give a script, content or summary")
	}
	repurpose := asString(in["mode"]) == "repurpose"
	if given, _ := in["given"].(bool); given && notes == "" {
		return &result{outputs: map[string]any{"script": script, "style": style, "source": "input",
			"note": "the creator's script, used as is"}}, nil
	}
	var prompt string
	if repurpose {
		prompt = fmt.Sprintf("Turn this content into a short-video script in a %s style", style)
	} else {
		prompt = fmt.Sprintf("Rewrite this short-video script in a %s style", style)
	}
	if p := asString(in["platform"]); p != "" {
		prompt += " for " + p
	}
	if repurpose {
		prompt += ". Keep its facts; give a hook, three beats and a call to action, one per line."
	} else {
		prompt += ". Keep its structure (hook, beats, call to action) and its length."
	}
	if l := asString(in["language"]); l != "" {
		prompt += " Write in the language " + l + "."
	}
	if notes != "" {
		prompt += "\nApply the reviewer's notes: " + notes
	}
	prompt += knowledgePrompt(in)
	prompt += "\n\nScript:\n" + script
	g, why := generateText(ctx, sc, scriptSystem, prompt, 900)
	if g != nil {
		out := map[string]any{"script": strings.TrimSpace(g.Text), "style": style}
		if notes != "" {
			out["notes_applied"] = true
		}
		if c, ok := in["citations"]; ok {
			out["citations"] = c
		}
		return modelResult(out, g), nil
	}
	if repurpose {
		// Without a model the content cannot be rewritten; the template builds a script from its
		// own sentences and says so.
		b := newBrief(map[string]any{"format": "video", "summary": script, "topic": in["topic"], "platform": in["platform"],
			"language": in["language"], "duration": in["duration"], "style": style})
		out := b.template()
		out["repurposed"] = false
		return templateResult(out, why+"; content not repurposed: the script is built from the source's own sentences"), nil
	}
	text, rules := rewriteTemplate(script, style)
	out := map[string]any{"script": text, "style": style, "rules": rules, "rewritten": false}
	why += fmt.Sprintf("; not rewritten to the %s style, only fixed rules applied", style)
	if notes != "" {
		out["notes_applied"] = false
		why += "; reviewer notes not applied: " + clip(notes, 300)
	}
	return templateResult(out, why), nil
}

// knowledgePrompt is the knowledge-base passages of a step's inputs as a prompt section, each
// with its citation marker and source.
func knowledgePrompt(in map[string]any) string {
	notes, _ := in["knowledge"].([]any)
	if len(notes) == 0 {
		return ""
	}
	cites, _ := in["citations"].([]any)
	var b strings.Builder
	b.WriteString("\nFacts from the knowledge base (use them where they fit, keep their numbers exact; " +
		"do not read citation markers aloud or put them in the script):")
	for i, k := range notes {
		src := ""
		if i < len(cites) {
			if c, ok := cites[i].(map[string]any); ok {
				src = firstNonEmpty(asString(c["document"]), asString(c["source"]))
			}
		}
		if src != "" {
			fmt.Fprintf(&b, "\n%s (%s) %s", engine.CiteMarker(i+1), src, asString(k))
		} else {
			fmt.Fprintf(&b, "\n%s %s", engine.CiteMarker(i+1), asString(k))
		}
	}
	return b.String()
}

// materialPrompt is the creator's descriptions of the pictures and clips the run shows (the
// step's material input) as a prompt section.
func materialPrompt(in map[string]any) string {
	ms, _ := in["material"].([]any)
	if len(ms) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\nThe pictures and clips the video shows, as the creator describes them (say what fits the topic):")
	for _, m := range ms {
		if m, ok := m.(map[string]any); ok {
			fmt.Fprintf(&b, "\n- %s: %s", asString(m["name"]), asString(m["description"]))
		}
	}
	return b.String()
}

// ---------------------------------------------------------------- kb_lookup

func lookupInputs(sc *stepCtx) map[string]any {
	topK := 5
	if n, ok := asNumber(sc.with["top_k"]); ok && n >= 1 && n <= 50 {
		topK = int(n)
	}
	ground, _ := sc.with["ground"].(bool)
	return map[string]any{
		"query":      firstNonEmpty(sc.param("query"), sc.input("question", "query", "message", "topic", "summary")),
		"top_k":      topK,
		"ground":     ground,
		"user_id":    sc.req.User.UserID,
		"project_id": sc.req.Project.ProjectID,
	}
}

func lookup(ctx context.Context, sc *stepCtx, in map[string]any) (*result, error) {
	q := asString(in["query"])
	if q == "" {
		return &result{outputs: map[string]any{"query": "", "hits": []any{}, "count": 0}}, nil
	}
	ground, _ := in["ground"].(bool)
	hits, err := sc.h.Search(ctx, &engine.SearchRequest{
		UserID: sc.req.User.UserID, ProjectID: sc.req.Project.ProjectID, Query: q, TopK: in["top_k"].(int), Ground: ground,
	})
	if err != nil {
		return nil, toolError("node.kb_lookup", "knowledge-base search failed", err)
	}
	out := make([]any, 0, len(hits))
	for _, h := range hits {
		out = append(out, map[string]any{
			"chunk_id": h.ChunkID, "text": h.ChunkText, "heading": h.Heading,
			"source": h.SourceName, "document": h.Document, "score": h.Score,
		})
	}
	return &result{outputs: map[string]any{"query": q, "hits": out, "count": len(out), "grounded": ground}}, nil
}

// ---------------------------------------------------------------- answer

func answerInputs(sc *stepCtx) map[string]any {
	in := map[string]any{
		"question": sc.input("question", "query", "message", "topic", "summary"),
		"hits":     len(sc.hits()),
	}
	if sid := sc.input("session_id"); sid != "" {
		in["session_id"] = sid
	}
	return in
}

func answer(ctx context.Context, sc *stepCtx, in map[string]any) (*result, error) {
	res, err := answerOf(ctx, sc, in)
	// The conversation goes on through a fallback answer: the chatflow tool's answer carries its
	// session_id, and so does this one, for the next turn to send it again.
	if sid := asString(in["session_id"]); err == nil && sid != "" {
		res.outputs["session_id"] = sid
	}
	return res, err
}

func answerOf(ctx context.Context, sc *stepCtx, in map[string]any) (*result, error) {
	question := asString(in["question"])
	if question == "" {
		return nil, errcode.New(errcode.Validation, "question is required")
	}
	hits, err := groundedHits(ctx, sc, question)
	if err != nil {
		return nil, err
	}
	if len(hits) == 0 {
		return &result{outputs: map[string]any{"answer": extract.NoBasis, "citations": []any{}, "source": "template",
			"note": "no citable basis in the knowledge base"}}, nil
	}
	citations := make([]any, len(hits))
	var frags strings.Builder
	for i, h := range hits {
		text := asString(h["text"])
		citations[i] = map[string]any{
			"number": i + 1, "chunk_id": h["chunk_id"], "source": h["source"], "document": h["document"], "excerpt": clip(text, 240),
		}
		fmt.Fprintf(&frags, "%s %s\n", engine.CiteMarker(i+1), text)
	}
	prompt := "Answer the question using only the numbered fragments below, and cite them as [#1], [#2], ... " +
		"If they do not answer it, say so.\n\nFragments:\n" + frags.String() + "\nQuestion: " + question
	g, why := generateText(ctx, sc, "You answer questions from a knowledge base, citing your sources.", prompt, 600)
	if g != nil {
		return modelResult(map[string]any{"answer": engine.NormalizeCitations(strings.TrimSpace(g.Text), len(citations)), "citations": citations}, g), nil
	}
	// Without a model: the sentences the knowledge base's extractive answerer quotes (the one of
	// /api/knowledge/ask), from passages the host said ground an answer.
	texts := make([]string, len(hits))
	heads := make([]string, len(hits))
	for i, h := range hits {
		texts[i], heads[i] = asString(h["text"]), asString(h["heading"])
	}
	text := engine.NormalizeCitations(extract.Extractive{Headings: heads}.Answer(question, texts), len(hits))
	cited := []any{}
	for i := range hits {
		if strings.Contains(text, engine.CiteMarker(i+1)) {
			cited = append(cited, citations[i])
		}
	}
	return templateResult(map[string]any{"answer": text, "citations": cited}, why), nil
}

// groundedHits are the passages an answer to question may quote: the nearest kb_lookup's hits when
// the host grounded them for this question (with: {ground: true}), else the host's grounding search
// for it (engine.SearchRequest.Ground: the rule of /api/knowledge/ask), so that the answer step
// refuses where the route refuses, whatever lookup came before it.
func groundedHits(ctx context.Context, sc *stepCtx, question string) ([]map[string]any, error) {
	hits := sc.hits()
	if g, _ := sc.latest("grounded").(bool); len(hits) == 0 || (g && asString(sc.latest("query")) == question) {
		return hits, nil
	}
	found, err := sc.h.Search(ctx, &engine.SearchRequest{
		UserID: sc.req.User.UserID, ProjectID: sc.req.Project.ProjectID, Query: question, TopK: len(hits), Ground: true,
	})
	if err != nil {
		return nil, toolError("node.answer", "knowledge-base search failed", err)
	}
	out := make([]map[string]any, 0, len(found))
	for _, h := range found {
		out = append(out, map[string]any{"chunk_id": h.ChunkID, "text": h.ChunkText, "heading": h.Heading,
			"source": h.SourceName, "document": h.Document, "score": h.Score})
	}
	return out, nil
}

// ---------------------------------------------------------------- generator

// mediaKeys are the media links a generator's result may carry, passed on to later steps.
var mediaKeys = []string{"audio_url", "video_url", "image_url", "cover_url", "music_url", "subtitle_url",
	"thumbnail_url", "captions_vtt_url", "captions_srt_url"}

func generatorInputs(sc *stepCtx) map[string]any {
	payload := map[string]any{}
	// Every run input reaches the generator (a workflow's declared inputs are its steps' to use:
	// the cast of a drama, a music track, the material to show); what earlier steps made wins.
	for k, v := range sc.req.Inputs {
		if v != nil && v != "" {
			payload[k] = v
		}
	}
	for _, k := range []string{"topic", "summary", "platform", "style", "language", "voice", "prompt", "url", "title"} {
		if s := sc.input(k); s != "" {
			payload[k] = s
		}
	}
	if d, ok := asNumber(sc.req.Inputs["duration"]); ok && d > 0 {
		payload["duration"] = d
	}
	if s := sc.latestString("script"); s != "" {
		payload["script"] = s
		payload["text"] = s
	}
	if p := sc.latestString("prompt"); p != "" {
		payload["prompt"] = p
	}
	for _, k := range mediaKeys {
		if s := sc.latestString(k); s != "" {
			payload[k] = s
		}
	}
	// The narration's sentence times (a speech job's), so captions follow what is said.
	if v, ok := sc.latest("sentences").([]any); ok && len(v) > 0 {
		payload["sentences"] = v
	}
	if params, ok := sc.with["params"].(map[string]any); ok {
		maps.Copy(payload, params)
	}
	return map[string]any{"job_type": sc.param("job_type"), "payload": payload}
}

func generate(ctx context.Context, sc *stepCtx, in map[string]any) (*result, error) {
	jobType := asString(in["job_type"])
	body, err := json.Marshal(in["payload"])
	if err != nil {
		return nil, errcode.E("node.generator", errcode.AgentInvalidOutput, "generator payload is not JSON", err)
	}
	job, err := sc.h.CreateJob(ctx, &engine.JobRequest{
		RunID: sc.req.RunID, StepID: sc.step.ID, Type: jobType, Request: body, Dispatch: true,
	})
	if err != nil {
		return nil, externalError(jobType, "could not create the "+jobType+" job", err)
	}
	if job.Status != engine.JobCompleted && job.Status != engine.JobFailed && job.Status != engine.JobTimeout {
		job, err = sc.h.WaitJob(ctx, job.JobID)
		if err != nil {
			return nil, externalError(jobType, "waiting for the "+jobType+" job failed", err)
		}
	}
	switch job.Status {
	case engine.JobCompleted:
	case engine.JobTimeout:
		return nil, errcode.Newf(errcode.WorkflowTimeout, "the %s job %s timed out", jobType, job.JobID)
	default:
		code, msg := engine.JobFailureCode(jobType), fmt.Sprintf("the %s job failed", jobType)
		if job.Error != nil {
			if c := errcode.Code(job.Error.Code); errcode.Known(c) && c != errcode.Unknown {
				code = c
			}
			if job.Error.Message != "" {
				msg += ": " + job.Error.Message
			}
		}
		return nil, errcode.New(code, msg)
	}
	out := map[string]any{"job_id": job.JobID, "job_type": jobType, "status": job.Status}
	if len(job.Result) > 0 {
		var res any
		if err := json.Unmarshal(job.Result, &res); err != nil {
			return nil, errcode.E("node.generator", errcode.AgentInvalidOutput, "the job result is not JSON", err)
		}
		out["result"] = res
		if m, ok := res.(map[string]any); ok {
			for k, v := range m {
				if _, taken := out[k]; !taken {
					out[k] = v
				}
			}
		}
	}
	return &result{outputs: out}, nil
}

// externalError keeps a host error's catalogue code, else names the generator's.
func externalError(jobType, msg string, err error) error {
	if c := errcode.Of(err); c != errcode.Unknown {
		return err
	}
	return errcode.E("node.generator", engine.JobFailureCode(jobType), msg, err)
}

// ---------------------------------------------------------------- assemble

func assembleInputs(sc *stepCtx) map[string]any {
	return map[string]any{"from": slices.Clone(sc.depOrder)}
}

func assemble(ctx context.Context, sc *stepCtx, in map[string]any) (*result, error) {
	out := map[string]any{}
	if s := sc.latestString("script"); s != "" {
		out["script"] = s
	}
	if t := sc.latestString("title"); t != "" {
		out["title"] = t
	}
	for _, k := range []string{"plan", "prompt", "answer", "citations", "hashtags", "notes_applied"} {
		if v := sc.latest(k); v != nil {
			out[k] = v
		}
	}
	// Where the text came from (model, template, input) and why, as its last writer said.
	for _, k := range []string{"source", "note"} {
		if s := sc.latestString(k); s != "" {
			out[k] = s
		}
	}
	assets := map[string]any{}
	for _, k := range mediaKeys {
		if s := sc.latestString(k); s != "" {
			assets[k] = s
		}
	}
	out["assets"] = assets
	// The product's length and frame, from the step that made it (a narration has a duration too).
	for _, k := range []string{"video_url", "image_url"} {
		if m := sc.producer(k); m != nil {
			for _, f := range []string{"duration", "width", "height"} {
				if v, ok := m[f]; ok {
					out[f] = v
				}
			}
			break
		}
	}
	var sources []any
	seen := map[string]bool{}
	for _, h := range sc.hits() {
		if s := asString(h["source"]); s != "" && !seen[s] {
			seen[s] = true
			sources = append(sources, s)
		}
	}
	if len(sources) > 0 {
		out["sources"] = sources
	}
	var skipped []any
	for _, s := range sc.skipped {
		if m, ok := s.(map[string]any); ok && slices.Contains(sc.depOrder, asString(m["step_id"])) {
			skipped = append(skipped, s)
		}
	}
	if len(skipped) > 0 {
		out["skipped"] = skipped
	}
	return &result{outputs: out}, nil
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}
