package manifest

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/reelforge/reelforge/sdk/engine"
	"github.com/reelforge/reelforge/sdk/errcode"
)

// EnginesDir is the folder of MANIFEST_DIR that holds the engine registry: one file per engine.
const EnginesDir = "engines"

var (
	engineNamePattern = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,63}$`)
	settingPattern    = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)
	envPattern        = regexp.MustCompile(`^[A-Z_][A-Z0-9_]*$`)
)

// Engine is one entry of the engine registry (manifests/engines/<name>.yaml): everything the host
// knows about an engine. Nothing about an engine is written anywhere else in the host, except the
// constructor of an engine the host can also run in its own process (host/app).
type Engine struct {
	Name string
	// Plugin is the binary's file name in PLUGIN_DIR; default <name>-plugin.
	Plugin string
	// SHA256 pins the binary (hex); empty: the host pins the file's hash when it starts.
	SHA256 string
	// Enabled false: the plugin is not launched and the workflows naming the engine run on their
	// fallback, with the reason in their trace.
	Enabled bool
	// Settings are given to the engine (the plugin reads them with engine.Settings); Resolve reads
	// the environment variables they refer to.
	Settings map[string]Setting
	// Callback is the callback kind of the engine's jobs (engine.CallbackGraph,
	// engine.CallbackAutomation or engine.CallbackAI).
	Callback string
	// OutageCodes are the error codes that mean the engine's external tool is down: a run failing
	// with one of them (or with EXTERNAL_SERVICE_ERROR) degrades to its fallback.
	OutageCodes []errcode.Code
	// Workflows false: the engine only executes the jobs the host hands it (generators); a
	// workflow manifest naming it is refused.
	Workflows bool
	// WorkflowSettings are the settings a workflow manifest naming this engine must carry.
	WorkflowSettings []string
	// Jobs are the time-out and retry policies of the job types the engine creates.
	Jobs map[string]JobPolicy
	File string // the file it was read from
}

// Setting is one engine setting: a literal value, or the value of an environment variable (with a
// default). A secret setting must come from the environment: it is never written in the file.
type Setting struct {
	Value   string `yaml:"value"`
	Env     string `yaml:"env"`
	Default string `yaml:"default"`
	Secret  bool   `yaml:"secret"`
}

// UnmarshalYAML takes a plain scalar as a literal value, or the mapping {env, default, secret, value}.
func (s *Setting) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		s.Value = n.Value
		return nil
	}
	type plain Setting
	return n.Decode((*plain)(s))
}

// JobPolicy is the time-out and retry policy of a job type (SPEC.md Limits).
type JobPolicy struct {
	MaxRetries  int
	Timeout     time.Duration
	Exponential bool          // back-off doubles per retry; else fixed
	Backoff     time.Duration // first back-off
	// ErrorCode is the code of a job that failed at its executor; default EXTERNAL_SERVICE_ERROR.
	ErrorCode errcode.Code
}

// BackoffFor is the wait before retry number n (1 for the first retry).
func (p JobPolicy) BackoffFor(n int) time.Duration {
	d := p.Backoff
	if p.Exponential {
		for i := 1; i < n; i++ {
			d *= 2
		}
	}
	return d
}

// TakesCallbacks reports whether the engine's Callback interprets its jobs' callbacks.
func (e *Engine) TakesCallbacks() bool {
	return e.Callback == engine.CallbackGraph || e.Callback == engine.CallbackAutomation
}

// Outage reports whether code says the engine (its plugin or its external tool) is unavailable.
func (e *Engine) Outage(code errcode.Code) bool {
	return code == errcode.ExternalService || slices.Contains(e.OutageCodes, code)
}

// Resolve returns the engine's settings with their environment variables looked up in lookup.
func (e *Engine) Resolve(lookup func(string) (string, bool)) map[string]string {
	out := make(map[string]string, len(e.Settings))
	for k, s := range e.Settings {
		v := s.Value
		if s.Env != "" {
			v = s.Default
			if got, ok := lookup(s.Env); ok && got != "" {
				v = got
			}
		}
		out[k] = v
	}
	return out
}

// engineFile is an engine entry as written in YAML.
type engineFile struct {
	Name             string               `yaml:"name"`
	Plugin           string               `yaml:"plugin"`
	SHA256           string               `yaml:"sha256"`
	Enabled          *bool                `yaml:"enabled"`
	Settings         map[string]Setting   `yaml:"settings"`
	Callback         string               `yaml:"callback"`
	OutageCodes      []string             `yaml:"outage_codes"`
	Workflows        *bool                `yaml:"workflows"`
	WorkflowSettings []string             `yaml:"workflow_settings"`
	Jobs             map[string]jobPolicy `yaml:"jobs"`
}

type jobPolicy struct {
	Retries     *int   `yaml:"retries"`
	Timeout     string `yaml:"timeout"`
	Backoff     string `yaml:"backoff"`
	Exponential bool   `yaml:"exponential"`
	ErrorCode   string `yaml:"error_code"`
}

// LoadEngines reads the engine registry folder dir (*.yaml, one engine a file). Every problem is
// an *Error naming the file and the field; a folder that does not exist holds no engines.
func LoadEngines(dir string) ([]*Engine, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("manifest: read engines folder: %w", err)
	}
	var (
		errs []error
		out  []*Engine
		seen = map[string]string{} // name -> file
		jobs = map[string]string{} // job type -> file
	)
	for _, de := range entries {
		ext := filepath.Ext(de.Name())
		if de.IsDir() || (ext != ".yaml" && ext != ".yml") {
			continue
		}
		path := filepath.Join(dir, de.Name())
		b, err := os.ReadFile(path)
		if err != nil {
			errs = append(errs, fmt.Errorf("manifest: %w", err))
			continue
		}
		e, err := ParseEngine(path, b)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if other, dup := seen[e.Name]; dup {
			errs = append(errs, &Error{File: path, Field: "name", Problem: fmt.Sprintf("%q is also the name of %s", e.Name, other)})
			continue
		}
		seen[e.Name] = path
		for _, t := range slices.Sorted(maps.Keys(e.Jobs)) {
			if other, dup := jobs[t]; dup {
				errs = append(errs, &Error{File: path, Field: "jobs." + t, Problem: "job type is also declared by " + other})
			}
			jobs[t] = path
		}
		out = append(out, e)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// ParseEngine validates the engine entry in b; name is used in errors (usually the file path).
func ParseEngine(name string, b []byte) (*Engine, error) {
	var f engineFile
	if err := decodeStrict(name, b, &f, "empty engine manifest"); err != nil {
		return nil, err
	}
	v := validator{file: name}
	e := &Engine{Name: f.Name, Plugin: f.Plugin, SHA256: strings.ToLower(f.SHA256), Enabled: f.Enabled == nil || *f.Enabled,
		Settings: f.Settings, Callback: f.Callback, Workflows: f.Workflows == nil || *f.Workflows,
		WorkflowSettings: f.WorkflowSettings, Jobs: map[string]JobPolicy{}, File: name}
	switch {
	case f.Name == "":
		v.add("name", "is required")
	case !engineNamePattern.MatchString(f.Name):
		v.add("name", "%q must match %s", f.Name, engineNamePattern)
	}
	if e.Plugin == "" {
		e.Plugin = f.Name + "-plugin"
	} else if filepath.Base(e.Plugin) != e.Plugin || strings.HasPrefix(e.Plugin, ".") {
		v.add("plugin", "%q must be a file name in PLUGIN_DIR, not a path", e.Plugin)
	}
	if e.SHA256 != "" && !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(e.SHA256) {
		v.add("sha256", "must be 64 hex digits (the output of sha256sum)")
	}
	switch e.Callback {
	case "":
		e.Callback = engine.CallbackAI
	case engine.CallbackGraph, engine.CallbackAutomation, engine.CallbackAI:
	default:
		v.add("callback", "unknown callback kind %q (want graph, automation or ai)", e.Callback)
	}
	for i, c := range f.OutageCodes {
		if !errcode.Known(errcode.Code(c)) {
			v.add(fmt.Sprintf("outage_codes[%d]", i), "unknown error code %q", c)
		}
		e.OutageCodes = append(e.OutageCodes, errcode.Code(c))
	}
	for i, s := range f.WorkflowSettings {
		if !settingPattern.MatchString(s) {
			v.add(fmt.Sprintf("workflow_settings[%d]", i), "%q must match %s", s, settingPattern)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(f.Settings)) {
		s, at := f.Settings[k], "settings."+k
		switch {
		case !settingPattern.MatchString(k):
			v.add(at, "setting name must match %s", settingPattern)
		case s.Env != "" && !envPattern.MatchString(s.Env):
			v.add(at+".env", "%q is not an environment variable name", s.Env)
		case s.Env != "" && s.Value != "":
			v.add(at, "give value or env, not both")
		case s.Secret && (s.Env == "" || s.Value != "" || s.Default != ""):
			v.add(at, "a secret comes from the environment only: give env, and no value or default")
		case s.Env == "" && s.Default != "":
			v.add(at+".default", "applies to env settings only")
		}
	}
	for _, t := range slices.Sorted(maps.Keys(f.Jobs)) {
		e.Jobs[t] = v.jobPolicy("jobs."+t, f.Jobs[t])
	}
	if len(v.errs) > 0 {
		return nil, errors.Join(v.errs...)
	}
	return e, nil
}

func (v *validator) jobPolicy(at string, p jobPolicy) JobPolicy {
	out := JobPolicy{Exponential: p.Exponential, ErrorCode: errcode.ExternalService}
	if !stepIDPattern.MatchString(strings.TrimPrefix(at, "jobs.")) {
		v.add(at, "job type must match %s", stepIDPattern)
	}
	if p.Retries != nil {
		if *p.Retries < 0 || *p.Retries > 10 {
			v.add(at+".retries", "must be 0 to 10, got %d", *p.Retries)
		}
		out.MaxRetries = *p.Retries
	}
	dur := func(field, s string, required bool) time.Duration {
		if s == "" {
			if required {
				v.add(at+"."+field, "is required (a duration, e.g. \"60s\")")
			}
			return 0
		}
		d, err := time.ParseDuration(s)
		if err != nil || d < 0 {
			v.add(at+"."+field, "%q is not a duration (e.g. \"60s\")", s)
		}
		return d
	}
	out.Timeout = dur("timeout", p.Timeout, true)
	out.Backoff = dur("backoff", p.Backoff, false)
	if p.ErrorCode != "" {
		if !errcode.Known(errcode.Code(p.ErrorCode)) {
			v.add(at+".error_code", "unknown error code %q", p.ErrorCode)
		}
		out.ErrorCode = errcode.Code(p.ErrorCode)
	}
	return out
}
