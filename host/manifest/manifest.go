// Package manifest reads and validates the workflow manifests (manifests/*.yaml) and the engine
// registry (manifests/engines/*.yaml).
//
// A manifest names a workflow: its id, version, the engine that runs it (an engine of the engine
// registry), the engine used while that one is down (fallback, always node today), engine-specific
// settings, a small input schema, a timeout and the node `steps`: the DAG the node engine executes,
// for node workflows and when another engine degrades to node.
//
// The engine registry is the folder engines/ of the manifest folder, one file per engine
// (engine.go): its plugin binary, pinned sha256, enabled, settings, callback kind, outage codes and
// job policies. Every fact the host knows about an engine is there.
//
// Load reads a folder into a Registry and refuses the first start with an error naming the file and
// the field of every problem. A Registry is read-only after Load and safe for concurrent use.
package manifest

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/reelforge/reelforge/sdk/engine"
	"github.com/reelforge/reelforge/sdk/errcode"
)

// EngineNode is the host's own engine: it runs in process (and, with an engine entry, also as a
// plugin), and it is the fallback of every workflow.
const EngineNode = "node"

// Input field types of an input schema.
const (
	TypeString  = "string"
	TypeNumber  = "number"
	TypeBoolean = "boolean"
	TypeObject  = "object"
)

// Manifest is one validated workflow manifest.
type Manifest struct {
	ID          string
	Name        string
	Description string
	Version     string
	Engine      string
	Fallback    string // engine used while Engine is down; "node"
	Schedulable bool   // the scheduler may trigger it
	Settings    map[string]any
	Inputs      []Field
	// RequiredAny names declared inputs of which a run must give at least one (what the content
	// is about: a topic, a brief, a script, ...); empty: no such rule.
	RequiredAny []string
	Timeout     time.Duration
	Steps       []engine.Step
	// Product are the outputs that make a run worth having (a video's video_url, a cover's
	// image_url): a run that ends without one of them fails (host/runs), whatever its steps say.
	Product []Product
	File    string // the file it was read from
}

// Product is one output a run of the workflow must hand back, and the step that makes it (whose
// error a run without the output fails with).
type Product struct {
	Output string `json:"output" yaml:"output"`
	Step   string `json:"step,omitempty" yaml:"step"`
}

// Field is one input of a manifest's input schema.
type Field struct {
	Name      string `json:"name" yaml:"name"`
	Type      string `json:"type" yaml:"type"`
	Required  bool   `json:"required" yaml:"required"`
	MaxLength int    `json:"max_length,omitempty" yaml:"max_length"` // in characters; strings only
	// Enum lists the values a string input may take (e.g. aspect_ratio's frames); empty: any.
	Enum        []string `json:"enum,omitempty" yaml:"enum"`
	Description string   `json:"description,omitempty" yaml:"description"`
}

// Summary is the public description of a manifest, as GET /api/workflow/manifests lists it.
type Summary struct {
	ID          string   `json:"id"`
	Name        string   `json:"name"`
	Description string   `json:"description,omitempty"`
	Version     string   `json:"version"`
	Engine      string   `json:"engine"`
	Fallback    string   `json:"fallback"`
	Schedulable bool     `json:"schedulable"`
	Inputs      []Field  `json:"inputs"`
	RequiredAny []string `json:"required_any,omitempty"`
}

// Summary returns the public description of m.
func (m *Manifest) Summary() Summary {
	inputs := slices.Clone(m.Inputs)
	if inputs == nil {
		inputs = []Field{}
	}
	return Summary{
		ID: m.ID, Name: m.Name, Description: m.Description, Version: m.Version,
		Engine: m.Engine, Fallback: m.Fallback, Schedulable: m.Schedulable, Inputs: inputs,
		RequiredAny: slices.Clone(m.RequiredAny),
	}
}

// Workflow returns the part of m an engine needs, its settings resolved (resolveSetting). Each
// call returns a fresh copy.
func (m *Manifest) Workflow() engine.Workflow {
	var settings json.RawMessage
	if len(m.Settings) > 0 {
		resolved := make(map[string]any, len(m.Settings))
		for k, v := range m.Settings {
			resolved[k] = resolveSetting(v)
		}
		// Settings came from YAML as plain maps, lists and scalars: they always marshal.
		b, err := json.Marshal(resolved)
		if err == nil {
			settings = b
		}
	}
	steps := make([]engine.Step, len(m.Steps))
	for i, s := range m.Steps {
		s.DependsOn = slices.Clone(s.DependsOn)
		s.With = slices.Clone(s.With)
		if s.Retries != nil {
			r := *s.Retries
			s.Retries = &r
		}
		steps[i] = s
	}
	return engine.Workflow{
		ID: m.ID, Name: m.Name, Version: m.Version, Engine: m.Engine,
		Settings: settings, Steps: steps, Timeout: m.Timeout,
	}
}

// Declares reports whether m's input schema declares the input name.
func (m *Manifest) Declares(name string) bool {
	return slices.ContainsFunc(m.Inputs, func(f Field) bool { return f.Name == name })
}

// Setting returns the string setting key of m ("" when absent), e.g. graph_id, resolved
// (resolveSetting).
func (m *Manifest) Setting(key string) string {
	s, _ := resolveSetting(m.Settings[key]).(string)
	return s
}

// envSetting reads a workflow setting written {env: NAME, default: VALUE} (default optional): the
// value of an id the operator makes, such as a Flowise chatflow's UUID, comes from the environment.
func envSetting(v any) (name, def string, ok bool) {
	m, isMap := v.(map[string]any)
	if !isMap {
		return "", "", false
	}
	name, ok = m["env"].(string)
	def, _ = m["default"].(string)
	for k := range m {
		if k != "env" && k != "default" {
			return "", "", false
		}
	}
	return name, def, ok && envPattern.MatchString(name)
}

// resolveSetting is v, or for {env: NAME, default: VALUE} the variable's value now (its default
// when unset or empty).
func resolveSetting(v any) any {
	name, def, ok := envSetting(v)
	if !ok {
		return v
	}
	if got := os.Getenv(name); got != "" {
		return got
	}
	return def
}

// ValidateInputs checks inputs against m's input schema: required fields present, declared fields
// of the right type and length. Inputs the schema does not declare are allowed. The error is an
// *errcode.Error VALIDATION_ERROR whose Details are []errcode.FieldError, one per problem.
func (m *Manifest) ValidateInputs(inputs map[string]any) error {
	var problems []errcode.FieldError
	for _, f := range m.Inputs {
		v, ok := inputs[f.Name]
		if !ok || v == nil || blank(v) {
			if f.Required {
				problems = append(problems, errcode.FieldError{Field: f.Name, Problem: "is required"})
			}
			continue
		}
		if p := f.check(v); p != "" {
			problems = append(problems, errcode.FieldError{Field: f.Name, Problem: p})
		}
	}
	if len(m.RequiredAny) > 0 && !slices.ContainsFunc(m.RequiredAny, func(name string) bool {
		v, ok := inputs[name]
		return ok && v != nil && !blank(v)
	}) {
		problems = append(problems, errcode.FieldError{Field: m.RequiredAny[0],
			Problem: "is required: give " + strings.Join(m.RequiredAny, ", or ") + " (what the content is about)"})
	}
	if len(problems) == 0 {
		return nil
	}
	msg := problems[0].Field + ": " + problems[0].Problem
	if len(problems) > 1 {
		msg += fmt.Sprintf(" (and %d more)", len(problems)-1)
	}
	return errcode.New(errcode.Validation, msg).WithDetails(problems)
}

// blank reports whether v is a string of white space only (a required input it does not give).
func blank(v any) bool {
	s, ok := v.(string)
	return ok && strings.TrimSpace(s) == ""
}

// check returns the problem with value v, or "".
func (f Field) check(v any) string {
	switch f.Type {
	case TypeString:
		s, ok := v.(string)
		if _, list := v.([]any); list && strings.Contains(f.Description, "comma-separated") {
			// A list is what a caller of an input of several items sends first (media, tags).
			return "must be one string of its items, comma-separated, not a list"
		}
		if !ok {
			return "must be a string"
		}
		if f.MaxLength > 0 && utf8.RuneCountInString(s) > f.MaxLength {
			return fmt.Sprintf("must be at most %d characters", f.MaxLength)
		}
		if len(f.Enum) > 0 && !slices.Contains(f.Enum, strings.TrimSpace(s)) {
			return fmt.Sprintf("%q is not one of %s", s, strings.Join(f.Enum, ", "))
		}
	case TypeNumber:
		switch v.(type) {
		case float64, float32, int, int32, int64, uint, uint32, uint64, json.Number:
		default:
			return "must be a number"
		}
	case TypeBoolean:
		if _, ok := v.(bool); !ok {
			return "must be a boolean"
		}
	case TypeObject:
		if _, ok := v.(map[string]any); !ok {
			return "must be an object"
		}
	}
	return ""
}

// Registry holds the workflow manifests and the engine registry of a folder. It is read-only and
// safe for concurrent use.
type Registry struct {
	byID    map[string]*Manifest
	engines map[string]*Engine
	jobs    map[string]*Engine // job type -> the engine whose entry declares its policy
}

// NewRegistry builds a Registry from already validated manifests (for tests and embedders), with
// no engine entries. Later manifests with the same id replace earlier ones.
func NewRegistry(ms ...*Manifest) *Registry {
	return NewRegistryWith(nil, ms...)
}

// NewRegistryWith builds a Registry from already validated engine entries and manifests.
func NewRegistryWith(engines []*Engine, ms ...*Manifest) *Registry {
	r := &Registry{byID: make(map[string]*Manifest, len(ms)), engines: map[string]*Engine{}, jobs: map[string]*Engine{}}
	for _, m := range ms {
		r.byID[m.ID] = m
	}
	for _, e := range engines {
		r.engines[e.Name] = e
		for t := range e.Jobs {
			r.jobs[t] = e
		}
	}
	return r
}

// Engine returns the registry entry of the engine name.
func (r *Registry) Engine(name string) (*Engine, bool) {
	e, ok := r.engines[name]
	return e, ok
}

// EngineList returns every engine entry, sorted by name.
func (r *Registry) EngineList() []*Engine { return sortedValues(r.engines) }

// Job returns the policy of job type typ and the engine whose entry declares it.
func (r *Registry) Job(typ string) (JobPolicy, *Engine, bool) {
	e, ok := r.jobs[typ]
	if !ok {
		return JobPolicy{}, nil, false
	}
	return e.Jobs[typ], e, true
}

// Get returns the manifest with id.
func (r *Registry) Get(id string) (*Manifest, bool) {
	m, ok := r.byID[id]
	return m, ok
}

// List returns every manifest, sorted by id.
func (r *Registry) List() []*Manifest { return sortedValues(r.byID) }

// sortedValues returns the values of m in the order of their keys.
func sortedValues[V any](m map[string]V) []V {
	keys := slices.Sorted(maps.Keys(m))
	out := make([]V, len(keys))
	for i, k := range keys {
		out[i] = m[k]
	}
	return out
}

// Summaries returns the summaries of every manifest, sorted by id.
func (r *Registry) Summaries() []Summary {
	ms := r.List()
	out := make([]Summary, len(ms))
	for i, m := range ms {
		out[i] = m.Summary()
	}
	return out
}

// Engines returns the names of the engines of the registry and of those the manifests name
// (primary and fallback), sorted and unique.
func (r *Registry) Engines() []string {
	set := map[string]bool{}
	for n := range r.engines {
		set[n] = true
	}
	for _, m := range r.byID {
		set[m.Engine] = true
		if m.Fallback != "" {
			set[m.Fallback] = true
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// Schedulable returns the ids of the manifests the scheduler may trigger, sorted.
func (r *Registry) Schedulable() []string {
	var out []string
	for _, m := range r.List() {
		if m.Schedulable {
			out = append(out, m.ID)
		}
	}
	return out
}
