package manifest_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/reelforge/reelforge/host/manifest"
	"github.com/reelforge/reelforge/internal/render"
	"github.com/reelforge/reelforge/sdk/errcode"
)

const valid = `
id: demo
name: Demo
version: "1.0.0"
engine: node
timeout: 5m
inputs:
  - {name: topic, type: string, max_length: 10}
  - {name: duration, type: number}
  - {name: draft, type: boolean}
  - {name: meta, type: object}
  - {name: summary, type: string, required: true}
  - {name: tags, type: string, description: "labels of yours, comma-separated"}
steps:
  - {id: a, agent: script_writer}
  - {id: b, agent: rewriter, depends_on: [a], retries: 1}
  - {id: c, agent: generator, depends_on: [a], with: {job_type: speech, optional: true}}
  - {id: d, agent: assemble, depends_on: [b, c]}
`

func TestParse(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		yaml    string
		wantErr string // substring; empty means valid
	}{
		"valid":            {yaml: valid},
		"graph with id":    {yaml: "id: g1\nname: G\nversion: '1'\nengine: graph\nsettings: {graph_id: x}\nsteps: [{id: a, agent: assemble}]\n"},
		"automation":       {yaml: "id: a1\nname: A\nversion: '1'\nengine: automation\nsettings: {webhook_path: m}\nsteps: [{id: a, agent: assemble}]\n"},
		"chatflow":         {yaml: "id: c1\nname: C\nversion: '1'\nengine: chatflow\nsettings: {chatflow_id: k}\nsteps: [{id: a, agent: answer}]\n"},
		"bad id":           {yaml: strings.Replace(valid, "id: demo", "id: Demo-1", 1), wantErr: `f.yaml: id: "Demo-1" must match`},
		"short id":         {yaml: strings.Replace(valid, "id: demo", "id: d", 1), wantErr: `f.yaml: id:`},
		"no version":       {yaml: strings.Replace(valid, `version: "1.0.0"`, "", 1), wantErr: "f.yaml: version: is required"},
		"no name":          {yaml: strings.Replace(valid, "name: Demo", "", 1), wantErr: "f.yaml: name: is required"},
		"bad engine name":  {yaml: strings.Replace(valid, "engine: node", "engine: No Engine", 1), wantErr: `f.yaml: engine: "No Engine" must match`},
		"bad fallback":     {yaml: strings.Replace(valid, "engine: node", "engine: node\nfallback: graph", 1), wantErr: "f.yaml: fallback:"},
		"bad timeout":      {yaml: strings.Replace(valid, "timeout: 5m", "timeout: soon", 1), wantErr: `f.yaml: timeout: "soon" is not a duration`},
		"negative timeout": {yaml: strings.Replace(valid, "timeout: 5m", "timeout: -5m", 1), wantErr: "f.yaml: timeout: must be positive"},
		"unknown dep":      {yaml: strings.Replace(valid, "depends_on: [b, c]", "depends_on: [b, x]", 1), wantErr: `f.yaml: steps[3].depends_on[1]: unknown step "x"`},
		"dup step":         {yaml: strings.Replace(valid, "{id: b,", "{id: a,", 1), wantErr: `f.yaml: steps[1].id: duplicate step "a"`},
		"reserved step id": {yaml: strings.Replace(valid, "{id: d,", "{id: script,", 1), wantErr: `f.yaml: steps[3].id: "script" is reserved`},
		"unknown agent":    {yaml: strings.Replace(valid, "agent: rewriter", "agent: poet", 1), wantErr: `f.yaml: steps[1].agent: unknown agent "poet"`},
		"cycle":            {yaml: strings.Replace(valid, "{id: a, agent: script_writer}", "{id: a, agent: script_writer, depends_on: [d]}", 1), wantErr: `f.yaml: steps: cycle "a" -> "d" -> "b" -> "a"`},
		"self dep":         {yaml: strings.Replace(valid, "depends_on: [a], retries", "depends_on: [b], retries", 1), wantErr: `steps[1].depends_on[0]: step "b" depends on itself`},
		"bad job type":     {yaml: strings.Replace(valid, "job_type: speech", "job_type: image", 1), wantErr: "f.yaml: steps[2].with.job_type:"},
		"bad optional":     {yaml: strings.Replace(valid, "optional: true", "optional: yes please", 1), wantErr: "f.yaml: steps[2].with.optional:"},
		"bad retries":      {yaml: strings.Replace(valid, "retries: 1", "retries: 99", 1), wantErr: "f.yaml: steps[1].retries:"},
		"bad input type":   {yaml: strings.Replace(valid, "type: boolean", "type: bool", 1), wantErr: `f.yaml: inputs[2].type: unknown type "bool"`},
		"dup input":        {yaml: strings.Replace(valid, "name: draft", "name: topic", 1), wantErr: `f.yaml: inputs[2].name: duplicate input "topic"`},
		"max_length num":   {yaml: strings.Replace(valid, "{name: duration, type: number}", "{name: duration, type: number, max_length: 3}", 1), wantErr: "f.yaml: inputs[1].max_length:"},
		"unknown field":    {yaml: valid + "colour: blue\n", wantErr: "f.yaml: invalid YAML: line"},
		"no steps on node": {yaml: "id: n1\nname: N\nversion: '1'\n", wantErr: "f.yaml: steps: is required"},
		"empty":            {yaml: "", wantErr: "f.yaml: empty manifest"},
		"product":          {yaml: valid + "product: [{output: audio_url, step: c}]\n"},
		"product no step":  {yaml: valid + "product: [{output: audio_url}]\n", wantErr: "f.yaml: product[0].step: is required"},
		"product unknown":  {yaml: valid + "product: [{output: audio_url, step: x}]\n", wantErr: `f.yaml: product[0].step: unknown step "x"`},
		"product output":   {yaml: valid + "product: [{output: Audio URL, step: c}]\n", wantErr: `f.yaml: product[0].output: "Audio URL" must match`},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			m, err := manifest.Parse("f.yaml", []byte(tt.yaml))
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Parse() error = %v, want nil", err)
				}
				if m == nil {
					t.Fatal("Parse() = nil manifest")
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Parse() error = %v, want it to contain %q", err, tt.wantErr)
			}
		})
	}
}

func TestParseDefaults(t *testing.T) {
	t.Parallel()
	m, err := manifest.Parse("f.yaml", []byte("id: n1\nname: N\nversion: '1'\nsteps: [{id: a, agent: assemble}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if m.Engine != "node" || m.Fallback != "node" || m.Timeout != manifest.DefaultTimeout {
		t.Errorf("defaults = %q %q %v, want node node %v", m.Engine, m.Fallback, m.Timeout, manifest.DefaultTimeout)
	}
	if m.Steps[0].Name != "a" {
		t.Errorf("step name = %q, want the id", m.Steps[0].Name)
	}
}

func TestWorkflow(t *testing.T) {
	t.Parallel()
	m, err := manifest.Parse("f.yaml", []byte(valid))
	if err != nil {
		t.Fatal(err)
	}
	wf := m.Workflow()
	if wf.ID != "demo" || wf.Engine != "node" || wf.Timeout != 5*time.Minute || len(wf.Steps) != 4 {
		t.Fatalf("Workflow() = %+v", wf)
	}
	if got, want := string(wf.Steps[2].With), `{"job_type":"speech","optional":true}`; got != want {
		t.Errorf("steps[2].With = %s, want %s", got, want)
	}
	if wf.Steps[1].Retries == nil || *wf.Steps[1].Retries != 1 {
		t.Errorf("steps[1].Retries = %v, want 1", wf.Steps[1].Retries)
	}
	wf.Steps[3].DependsOn[0] = "changed"
	if m.Steps[3].DependsOn[0] != "b" {
		t.Error("Workflow() shares DependsOn with the manifest")
	}
}

func TestRequiredAny(t *testing.T) {
	t.Parallel()
	y := strings.Replace(valid, "steps:", "required_any: [topic, meta]\nsteps:", 1)
	y = strings.Replace(y, "required: true", "required: false", 1)
	m, err := manifest.Parse("f.yaml", []byte(y))
	if err != nil {
		t.Fatal(err)
	}
	want := []errcode.FieldError{{Field: "topic", Problem: "is required: give topic, or meta (what the content is about)"}}
	for name, in := range map[string]map[string]any{"none": {"duration": 3}, "blank": {"topic": " "}, "null": {"topic": nil}} {
		e := errcode.As(m.ValidateInputs(in))
		if e == nil || cmp.Diff(want, e.Details) != "" {
			t.Errorf("%s: ValidateInputs(%v) = %v, want %v", name, in, e, want)
		}
	}
	for _, in := range []map[string]any{{"topic": "tea"}, {"meta": map[string]any{}}} {
		if err := m.ValidateInputs(in); err != nil {
			t.Errorf("ValidateInputs(%v) = %v, want nil", in, err)
		}
	}
	bad := strings.Replace(valid, "steps:", "required_any: [topic, nope]\nsteps:", 1)
	if _, err := manifest.Parse("f.yaml", []byte(bad)); err == nil || !strings.Contains(err.Error(), `required_any[1]: "nope" is not a declared input`) {
		t.Errorf("Parse(required_any of an undeclared input) = %v", err)
	}
}

func TestValidateInputs(t *testing.T) {
	t.Parallel()
	m, err := manifest.Parse("f.yaml", []byte(valid))
	if err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct {
		in   map[string]any
		want []errcode.FieldError
	}{
		"ok":             {in: map[string]any{"summary": "s", "topic": "coffee", "duration": 15.0, "draft": true, "meta": map[string]any{}}},
		"extras allowed": {in: map[string]any{"summary": "s", "platform": "douyin", "anything": []any{1}}},
		"int number":     {in: map[string]any{"summary": "s", "duration": 15}},
		"missing":        {in: map[string]any{"topic": "x"}, want: []errcode.FieldError{{Field: "summary", Problem: "is required"}}},
		"null required":  {in: map[string]any{"summary": nil}, want: []errcode.FieldError{{Field: "summary", Problem: "is required"}}},
		"blank required": {in: map[string]any{"summary": " \t"}, want: []errcode.FieldError{{Field: "summary", Problem: "is required"}}},
		"too long":       {in: map[string]any{"summary": "s", "topic": "咖啡咖啡咖啡咖啡咖啡咖"}, want: []errcode.FieldError{{Field: "topic", Problem: "must be at most 10 characters"}}},
		"chinese fits":   {in: map[string]any{"summary": "s", "topic": "咖啡咖啡咖啡咖啡咖啡"}},
		"wrong types": {in: map[string]any{"summary": 3, "duration": "15", "draft": "yes", "meta": []any{}}, want: []errcode.FieldError{
			{Field: "duration", Problem: "must be a number"}, {Field: "draft", Problem: "must be a boolean"},
			{Field: "meta", Problem: "must be an object"}, {Field: "summary", Problem: "must be a string"}}},
		"list for a comma-separated string": {in: map[string]any{"summary": "s", "tags": []any{"a", "b"}}, want: []errcode.FieldError{
			{Field: "tags", Problem: "must be one string of its items, comma-separated, not a list"}}},
		"list for a string": {in: map[string]any{"summary": []any{"a"}}, want: []errcode.FieldError{{Field: "summary", Problem: "must be a string"}}},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			err := m.ValidateInputs(tt.in)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("ValidateInputs(%v) = %v, want nil", tt.in, err)
				}
				return
			}
			e := errcode.As(err)
			if e == nil || e.Code != errcode.Validation {
				t.Fatalf("ValidateInputs(%v) = %v, want VALIDATION_ERROR", tt.in, err)
			}
			if diff := cmp.Diff(tt.want, e.Details); diff != "" {
				t.Errorf("ValidateInputs(%v) details (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

func TestLoad(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, body string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("b.yaml", strings.Replace(valid, "id: demo", "id: bravo", 1))
	write("a.yml", valid)
	write("notes.txt", "not a manifest")
	reg, err := manifest.Load(dir)
	if err != nil {
		t.Fatalf("Load() error = %v", err)
	}
	var ids []string
	for _, m := range reg.List() {
		ids = append(ids, m.ID)
	}
	if diff := cmp.Diff([]string{"bravo", "demo"}, ids); diff != "" {
		t.Errorf("List() ids (-want +got):\n%s", diff)
	}
	if _, ok := reg.Get("demo"); !ok {
		t.Error(`Get("demo") not found`)
	}
	if _, ok := reg.Get("nope"); ok {
		t.Error(`Get("nope") found`)
	}

	write("c.yaml", valid) // the same id as a.yml
	write("d.yaml", strings.Replace(valid, "depends_on: [b, c]", "depends_on: [b, x]", 1))
	_, err = manifest.Load(dir)
	if err == nil {
		t.Fatal("Load() of a folder with a duplicate id and a bad step = nil error")
	}
	for _, want := range []string{
		filepath.Join(dir, "c.yaml") + `: id: "demo" is also the id of ` + filepath.Join(dir, "a.yml"),
		filepath.Join(dir, "d.yaml") + `: steps[3].depends_on[1]: unknown step "x"`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Load() error = %v, want it to contain %q", err, want)
		}
	}
	var me *manifest.Error
	if !errors.As(err, &me) || me.File == "" {
		t.Errorf("Load() error %v carries no *manifest.Error", err)
	}
}

func TestLoadEmptyFolder(t *testing.T) {
	t.Parallel()
	if _, err := manifest.Load(t.TempDir()); err == nil {
		t.Error("Load() of an empty folder = nil error")
	}
}

// TestShippedManifests loads the repository's manifests/ folder: every id SPEC.md names is there,
// engines are as documented, and every manifest accepts what free users and the scheduler send.
func TestShippedManifests(t *testing.T) {
	t.Parallel()
	reg, err := manifest.Load(filepath.Join("..", "..", "manifests"))
	if err != nil {
		t.Fatalf("Load(manifests) error = %v", err)
	}
	wantEngine := map[string]string{
		"voiceover": "node", "graphic": "node", "music": "automation", "video": "node",
		"live": "graph", "short_drama": "graph", "voiceover_video": "node",
		"music_video_creation": "automation", "content_repurposing": "node",
		"content_plan_workflow": "node", "kb_chat": "chatflow", "script_review": "node",
	}
	for id, engine := range wantEngine {
		m, ok := reg.Get(id)
		if !ok {
			t.Errorf("manifest %q missing", id)
			continue
		}
		if m.Engine != engine || m.Fallback != "node" {
			t.Errorf("%s: engine, fallback = %s, %s, want %s, node", id, m.Engine, m.Fallback, engine)
		}
	}
	// The product of each workflow that makes media: a run without it fails (host/runs).
	wantProduct := map[string][]manifest.Product{
		"graphic":              {{Output: "image_url", Step: "cover"}},
		"voiceover":            {{Output: "audio_url", Step: "speech"}},
		"video":                {{Output: "audio_url", Step: "speech"}, {Output: "video_url", Step: "render"}},
		"voiceover_video":      {{Output: "audio_url", Step: "speech"}, {Output: "video_url", Step: "render"}},
		"music_video_creation": {{Output: "video_url", Step: "render"}},
	}
	for _, m := range reg.List() {
		if diff := cmp.Diff(wantProduct[m.ID], m.Product); diff != "" {
			t.Errorf("%s: product (-want +got):\n%s", m.ID, diff)
		}
	}
	// Every aspect_ratio input offers the frames the renderer makes, no other.
	for _, m := range reg.List() {
		for _, in := range m.Inputs {
			if in.Name == "aspect_ratio" && !slices.Equal(in.Enum, render.AspectRatios) {
				t.Errorf("%s: aspect_ratio enum %v, want render.AspectRatios %v", m.ID, in.Enum, render.AspectRatios)
			}
			// So do quality, transition and clip_audio the values the renderer reads.
			for name, values := range map[string][]string{"quality": render.Qualities, "transition": render.Transitions, "clip_audio": render.ClipAudios} {
				if in.Name == name && !slices.Equal(in.Enum, values) {
					t.Errorf("%s: %s enum %v, want %v", m.ID, name, in.Enum, values)
				}
			}
		}
	}
	if m, _ := reg.Get("voiceover_video"); m.ValidateInputs(map[string]any{"topic": "x", "aspect_ratio": "2:1"}) == nil {
		t.Error(`voiceover_video accepts aspect_ratio "2:1"`)
	}
	if m, _ := reg.Get("voiceover_video"); m.ValidateInputs(map[string]any{"topic": "x", "quality": "ultra"}) == nil {
		t.Error(`voiceover_video accepts quality "ultra"`)
	}
	wantSched := []string{"graphic", "live", "music", "short_drama", "video", "voiceover"}
	if diff := cmp.Diff(wantSched, reg.Schedulable()); diff != "" {
		t.Errorf("Schedulable() (-want +got):\n%s", diff)
	}
	for _, m := range reg.List() {
		for _, in := range []map[string]any{
			{"topic": "morning coffee", "summary": "a short video about coffee", "platform": "douyin"},
			{"summary": "a short video about coffee", "platform": "douyin"},
		} {
			if err := m.ValidateInputs(in); err != nil {
				t.Errorf("%s: ValidateInputs(%v) = %v, want nil", m.ID, in, err)
			}
		}
		if m.Schedulable {
			for _, s := range m.Steps {
				if s.Agent == "human_input" {
					t.Errorf("%s: schedulable workflow has human_input step %q", m.ID, s.ID)
				}
			}
		}
		s := m.Summary()
		if s.ID != m.ID || s.Engine == "" || s.Fallback == "" || s.Inputs == nil {
			t.Errorf("%s: Summary() = %+v", m.ID, s)
		}
	}
}

// A workflow setting {env: NAME, default: VALUE} is read from the environment when a run starts:
// the id of a chatflow the operator made (a Flowise UUID) is not written in the manifest.
func TestEnvSettings(t *testing.T) {
	m, err := manifest.Parse("f.yaml", []byte("id: chat\nname: C\nversion: '1'\nengine: chatflow\n"+
		"settings: {chatflow_id: {env: TEST_REELFORGE_FLOW}, other: {env: TEST_REELFORGE_UNSET, default: d}, plain: p}\n"+
		"steps: [{id: a, agent: answer}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("TEST_REELFORGE_FLOW", "0b9d-uuid")
	if got := m.Setting("chatflow_id"); got != "0b9d-uuid" {
		t.Errorf("Setting(chatflow_id) = %q, want the variable's value", got)
	}
	var got map[string]any
	if err := json.Unmarshal(m.Workflow().Settings, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"chatflow_id": "0b9d-uuid", "other": "d", "plain": "p"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Workflow().Settings mismatch (-want +got):\n%s", diff)
	}
}
