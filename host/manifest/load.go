package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/reelforge/reelforge/sdk/engine"
)

// DefaultTimeout is the timeout of a manifest that names none.
const DefaultTimeout = 10 * time.Minute

var (
	idPattern     = regexp.MustCompile(`^[a-z][a-z0-9_]{1,63}$`)
	stepIDPattern = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)
)

// agents are the agents of the node engine (plugins/node). A step naming another agent is refused.
var agents = map[string]bool{
	"script_writer": true, "rewriter": true, "kb_lookup": true, "generator": true,
	"human_input": true, "assemble": true, "answer": true,
}

// reservedSteps are keys the node engine puts at the top level of a run's outputs; a step with
// such an id would hide them (outputs carry each step's outputs under its id).
var reservedSteps = map[string]bool{
	"script": true, "title": true, "answer": true, "citations": true, "assets": true, "plan": true,
	"prompt": true, "sources": true, "skipped": true, "skipped_steps": true, "hashtags": true,
	"warnings": true,
}

// Error is one problem of one manifest file; Load joins them.
type Error struct {
	File    string // path of the file
	Field   string // e.g. "steps[2].depends_on"; empty for problems of the whole file
	Problem string
}

func (e *Error) Error() string {
	if e.Field == "" {
		return e.File + ": " + e.Problem
	}
	return e.File + ": " + e.Field + ": " + e.Problem
}

// file is a manifest as written in YAML.
type file struct {
	ID          string         `yaml:"id"`
	Name        string         `yaml:"name"`
	Description string         `yaml:"description"`
	Version     string         `yaml:"version"`
	Engine      string         `yaml:"engine"`
	Fallback    string         `yaml:"fallback"`
	Schedulable bool           `yaml:"schedulable"`
	Settings    map[string]any `yaml:"settings"`
	Inputs      []Field        `yaml:"inputs"`
	RequiredAny []string       `yaml:"required_any"`
	Timeout     string         `yaml:"timeout"`
	Steps       []fileStep     `yaml:"steps"`
	Product     []Product      `yaml:"product"`
}

type fileStep struct {
	ID        string         `yaml:"id"`
	Name      string         `yaml:"name"`
	Agent     string         `yaml:"agent"`
	DependsOn []string       `yaml:"depends_on"`
	With      map[string]any `yaml:"with"`
	Retries   *int           `yaml:"retries"`
}

// Load reads the engine registry (dir/engines/*.yaml) and every *.yaml and *.yml workflow
// manifest of dir (not its subfolders) and validates each, and each workflow's engine against the
// registry. When any file is invalid, two files share an id, or a workflow names an engine the
// registry does not hold, it returns no registry and an error joining one *Error per problem, each
// naming the file and the field.
func Load(dir string) (*Registry, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("manifest: read folder: %w", err)
	}
	engines, err := LoadEngines(filepath.Join(dir, EnginesDir))
	if err != nil {
		return nil, err
	}
	byName := map[string]*Engine{}
	for _, e := range engines {
		byName[e.Name] = e
	}
	var (
		errs []error
		ms   []*Manifest
		seen = map[string]string{} // id -> file
	)
	for _, e := range entries {
		ext := filepath.Ext(e.Name())
		if e.IsDir() || (ext != ".yaml" && ext != ".yml") {
			continue
		}
		path := filepath.Join(dir, e.Name())
		m, err := ReadFile(path)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if other, dup := seen[m.ID]; dup {
			errs = append(errs, &Error{File: path, Field: "id", Problem: fmt.Sprintf("%q is also the id of %s", m.ID, other)})
			continue
		}
		seen[m.ID] = path
		if err := CheckEngine(m, byName); err != nil {
			errs = append(errs, err)
			continue
		}
		ms = append(ms, m)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if len(ms) == 0 {
		return nil, fmt.Errorf("manifest: no *.yaml manifests in %s", dir)
	}
	return NewRegistryWith(engines, ms...), nil
}

// CheckEngine checks that the engine m names is node or an entry of engines that runs workflows,
// and that m carries the settings that entry requires of its workflows. A disabled engine is no
// error: its workflows run on their fallback.
func CheckEngine(m *Manifest, engines map[string]*Engine) error {
	if m.Engine == EngineNode {
		return nil
	}
	e, ok := engines[m.Engine]
	if !ok {
		names := []string{EngineNode}
		for n := range engines {
			if n != EngineNode {
				names = append(names, n)
			}
		}
		slices.Sort(names[1:])
		return &Error{File: m.File, Field: "engine", Problem: fmt.Sprintf("unknown engine %q: it needs an entry %s/%s.yaml in the engine registry (known: %s)",
			m.Engine, EnginesDir, m.Engine, strings.Join(names, ", "))}
	}
	if !e.Workflows {
		return &Error{File: m.File, Field: "engine", Problem: fmt.Sprintf("engine %q runs no workflows, only the jobs of generator steps (%s: workflows: false)", m.Engine, e.File)}
	}
	var errs []error
	for _, key := range e.WorkflowSettings {
		if _, _, env := envSetting(m.Settings[key]); env {
			continue // its value is the environment's, when a run starts
		}
		if s, _ := m.Settings[key].(string); strings.TrimSpace(s) == "" {
			errs = append(errs, &Error{File: m.File, Field: "settings." + key, Problem: fmt.Sprintf("is required for engine %s (%s)", m.Engine, e.File)})
		}
	}
	return errors.Join(errs...)
}

// ReadFile reads and validates one manifest file.
func ReadFile(path string) (*Manifest, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	return Parse(path, b)
}

// Parse validates the manifest in b; name is used in errors (usually the file path).
func Parse(name string, b []byte) (*Manifest, error) {
	var f file
	if err := decodeStrict(name, b, &f, "empty manifest"); err != nil {
		return nil, err
	}
	v := validator{file: name}
	m := v.manifest(&f)
	if len(v.errs) > 0 {
		return nil, errors.Join(v.errs...)
	}
	return m, nil
}

// decodeStrict decodes the YAML document in b into out, refusing fields out does not declare; an
// empty document is the problem empty, and either failure is an *Error naming the file name.
func decodeStrict(name string, b []byte, out any, empty string) error {
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(out); err != nil {
		if errors.Is(err, io.EOF) {
			return &Error{File: name, Problem: empty}
		}
		return &Error{File: name, Problem: "invalid YAML: " + yamlProblem(err)}
	}
	return nil
}

type validator struct {
	file string
	errs []error
}

func (v *validator) add(field, format string, args ...any) {
	v.errs = append(v.errs, &Error{File: v.file, Field: field, Problem: fmt.Sprintf(format, args...)})
}

func (v *validator) manifest(f *file) *Manifest {
	m := &Manifest{
		ID: f.ID, Name: f.Name, Description: f.Description, Version: f.Version, Engine: f.Engine,
		Fallback: f.Fallback, Schedulable: f.Schedulable, Settings: f.Settings, Inputs: f.Inputs, RequiredAny: f.RequiredAny, File: v.file,
	}
	switch {
	case f.ID == "":
		v.add("id", "is required")
	case !idPattern.MatchString(f.ID):
		v.add("id", "%q must match %s", f.ID, idPattern)
	}
	if strings.TrimSpace(f.Name) == "" {
		v.add("name", "is required")
	}
	if strings.TrimSpace(f.Version) == "" {
		v.add("version", "is required")
	}
	v.engine(m, f)
	v.inputs(f.Inputs)
	for i, name := range f.RequiredAny {
		if !slices.ContainsFunc(f.Inputs, func(in Field) bool { return in.Name == name }) {
			v.add(fmt.Sprintf("required_any[%d]", i), "%q is not a declared input", name)
		}
	}
	m.Timeout = DefaultTimeout
	if f.Timeout != "" {
		d, err := time.ParseDuration(f.Timeout)
		switch {
		case err != nil:
			v.add("timeout", "%q is not a duration (e.g. \"10m\")", f.Timeout)
		case d <= 0:
			v.add("timeout", "must be positive, got %q", f.Timeout)
		default:
			m.Timeout = d
		}
	}
	m.Steps = v.steps(f.Steps)
	if len(f.Steps) == 0 && (m.Engine == EngineNode || m.Fallback == EngineNode) {
		v.add("steps", "is required: the node engine runs this workflow (engine or fallback node)")
	}
	m.Product = v.product(f.Product, f.Steps)
	return m
}

// product checks the product entries: each names an output and the step of steps that makes it.
func (v *validator) product(ps []Product, steps []fileStep) []Product {
	seen := map[string]bool{}
	for i, p := range ps {
		at := fmt.Sprintf("product[%d]", i)
		switch {
		case p.Output == "":
			v.add(at+".output", "is required (the output a run must hand back, e.g. video_url)")
		case !stepIDPattern.MatchString(p.Output):
			v.add(at+".output", "%q must match %s", p.Output, stepIDPattern)
		case seen[p.Output]:
			v.add(at+".output", "duplicate output %q", p.Output)
		}
		seen[p.Output] = true
		switch {
		case p.Step == "":
			v.add(at+".step", "is required (the step that makes %s)", p.Output)
		case !slices.ContainsFunc(steps, func(s fileStep) bool { return s.ID == p.Step }):
			v.add(at+".step", "unknown step %q", p.Step)
		}
	}
	return slices.Clone(ps)
}

func (v *validator) engine(m *Manifest, f *file) {
	if f.Engine == "" {
		m.Engine = EngineNode
	} else if !engineNamePattern.MatchString(f.Engine) {
		v.add("engine", "%q must match %s", f.Engine, engineNamePattern)
	}
	if f.Fallback == "" {
		m.Fallback = EngineNode
	} else if f.Fallback != EngineNode {
		v.add("fallback", "unknown fallback %q (want node)", f.Fallback)
	}
}

func (v *validator) inputs(fields []Field) {
	seen := map[string]bool{}
	for i, f := range fields {
		at := fmt.Sprintf("inputs[%d]", i)
		switch {
		case f.Name == "":
			v.add(at+".name", "is required")
		case seen[f.Name]:
			v.add(at+".name", "duplicate input %q", f.Name)
		}
		seen[f.Name] = true
		switch f.Type {
		case TypeString, TypeNumber, TypeBoolean, TypeObject:
		case "":
			v.add(at+".type", "is required (string, number, boolean or object)")
		default:
			v.add(at+".type", "unknown type %q (want string, number, boolean or object)", f.Type)
		}
		if f.MaxLength < 0 {
			v.add(at+".max_length", "must not be negative")
		}
		if f.MaxLength > 0 && f.Type != TypeString {
			v.add(at+".max_length", "applies to strings only")
		}
		if len(f.Enum) > 0 && f.Type != TypeString {
			v.add(at+".enum", "applies to strings only")
		}
	}
}

func (v *validator) steps(fs []fileStep) []engine.Step {
	index := map[string]int{}
	for i, s := range fs {
		at := fmt.Sprintf("steps[%d].id", i)
		switch {
		case s.ID == "":
			v.add(at, "is required")
		case !stepIDPattern.MatchString(s.ID):
			v.add(at, "%q must match %s", s.ID, stepIDPattern)
		case reservedSteps[s.ID]:
			v.add(at, "%q is reserved for the run's outputs; choose another step id", s.ID)
		default:
			if _, dup := index[s.ID]; dup {
				v.add(at, "duplicate step %q", s.ID)
			} else {
				index[s.ID] = i
			}
		}
	}
	steps := make([]engine.Step, 0, len(fs))
	for i, s := range fs {
		at := fmt.Sprintf("steps[%d]", i)
		if s.Agent == "" {
			v.add(at+".agent", "is required")
		} else if !agents[s.Agent] {
			v.add(at+".agent", "unknown agent %q (want one of %s)", s.Agent, strings.Join(agentNames(), ", "))
		}
		for j, d := range s.DependsOn {
			if _, ok := index[d]; !ok {
				v.add(fmt.Sprintf("%s.depends_on[%d]", at, j), "unknown step %q", d)
			} else if d == s.ID {
				v.add(fmt.Sprintf("%s.depends_on[%d]", at, j), "step %q depends on itself", d)
			}
		}
		if s.Retries != nil && (*s.Retries < 0 || *s.Retries > 10) {
			v.add(at+".retries", "must be 0 to 10, got %d", *s.Retries)
		}
		if s.Agent == "generator" {
			jt, _ := s.With["job_type"].(string)
			if !engine.IsGeneratorJob(jt) {
				v.add(at+".with.job_type", "generator needs job_type %s, got %q", strings.Join(engine.GeneratorJobs, ", "), jt)
			}
		}
		if o, ok := s.With["optional"]; ok {
			if _, isBool := o.(bool); !isBool {
				v.add(at+".with.optional", "must be true or false")
			}
		}
		var with json.RawMessage
		if len(s.With) > 0 {
			b, err := json.Marshal(s.With)
			if err != nil {
				v.add(at+".with", "cannot be expressed as JSON: %v", err)
			}
			with = b
		}
		name := s.Name
		if name == "" {
			name = s.ID
		}
		steps = append(steps, engine.Step{
			ID: s.ID, Name: name, Agent: s.Agent, DependsOn: s.DependsOn, With: with, Retries: s.Retries,
		})
	}
	if cycle := findCycle(fs, index); cycle != nil {
		v.add("steps", "cycle %s", strings.Join(quoteAll(cycle), " -> "))
	}
	return steps
}

// findCycle returns the step ids of one dependency cycle (first id repeated at the end), or nil.
func findCycle(fs []fileStep, index map[string]int) []string {
	const (
		unvisited = iota
		active
		done
	)
	state := make([]int, len(fs))
	var path []string
	var visit func(i int) []string
	visit = func(i int) []string {
		state[i] = active
		path = append(path, fs[i].ID)
		for _, d := range fs[i].DependsOn {
			j, ok := index[d]
			if !ok {
				continue
			}
			switch state[j] {
			case active:
				start := slices.Index(path, d)
				return append(slices.Clone(path[start:]), d)
			case unvisited:
				if c := visit(j); c != nil {
					return c
				}
			}
		}
		path = path[:len(path)-1]
		state[i] = done
		return nil
	}
	for i, s := range fs {
		if state[i] != unvisited || index[s.ID] != i {
			continue
		}
		if c := visit(i); c != nil {
			return c
		}
	}
	return nil
}

func agentNames() []string {
	names := make([]string, 0, len(agents))
	for a := range agents {
		names = append(names, a)
	}
	slices.Sort(names)
	return names
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = fmt.Sprintf("%q", s)
	}
	return out
}

// yamlProblem flattens a YAML error to one line: "line 18: field colour not found in type ...".
func yamlProblem(err error) string {
	s := strings.TrimPrefix(err.Error(), "yaml: ")
	s = strings.TrimPrefix(s, "unmarshal errors:")
	parts := strings.Split(s, "\n")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return strings.Join(slices.DeleteFunc(parts, func(p string) bool { return p == "" }), "; ")
}
