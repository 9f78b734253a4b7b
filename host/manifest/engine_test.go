package manifest_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/reelforge/reelforge/host/manifest"
	"github.com/reelforge/reelforge/sdk/engine"
	"github.com/reelforge/reelforge/sdk/errcode"
)

const validEngine = `
name: greeter
sha256: 0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
settings:
  greeting: hello
  api_url: {env: GREETER_URL, default: "http://127.0.0.1:9"}
  api_key: {env: GREETER_KEY, secret: true}
callback: graph
outage_codes: [GRAPH_RUNNER_ERROR]
workflow_settings: [style]
jobs:
  greeting: {retries: 2, timeout: 30s, backoff: 1s, exponential: true, error_code: GRAPH_RUNNER_ERROR}
`

func TestParseEngine(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		yaml    string
		wantErr string // substring; empty means valid
	}{
		"valid":            {yaml: validEngine},
		"minimal":          {yaml: "name: tiny\n"},
		"no name":          {yaml: "enabled: true\n", wantErr: "e.yaml: name: is required"},
		"bad name":         {yaml: "name: Tiny Engine\n", wantErr: `e.yaml: name: "Tiny Engine" must match`},
		"plugin path":      {yaml: "name: tiny\nplugin: ../bin/x\n", wantErr: "e.yaml: plugin:"},
		"bad sha":          {yaml: strings.Replace(validEngine, "sha256: 0123", "sha256: zz23", 1), wantErr: "e.yaml: sha256: must be 64 hex digits"},
		"bad callback":     {yaml: strings.Replace(validEngine, "callback: graph", "callback: phone", 1), wantErr: `e.yaml: callback: unknown callback kind "phone"`},
		"bad outage code":  {yaml: strings.Replace(validEngine, "[GRAPH_RUNNER_ERROR]", "[RUNNER_DOWN]", 1), wantErr: `e.yaml: outage_codes[0]: unknown error code "RUNNER_DOWN"`},
		"secret in file":   {yaml: strings.Replace(validEngine, "{env: GREETER_KEY, secret: true}", "{value: hunter2, secret: true}", 1), wantErr: "e.yaml: settings.api_key: a secret comes from the environment only"},
		"bad env name":     {yaml: strings.Replace(validEngine, "env: GREETER_URL", "env: greeter-url", 1), wantErr: `e.yaml: settings.api_url.env: "greeter-url"`},
		"job no timeout":   {yaml: strings.Replace(validEngine, "timeout: 30s, ", "", 1), wantErr: "e.yaml: jobs.greeting.timeout: is required"},
		"job bad retries":  {yaml: strings.Replace(validEngine, "retries: 2", "retries: 20", 1), wantErr: "e.yaml: jobs.greeting.retries: must be 0 to 10"},
		"job bad code":     {yaml: strings.Replace(validEngine, "error_code: GRAPH_RUNNER_ERROR", "error_code: OOPS", 1), wantErr: `e.yaml: jobs.greeting.error_code: unknown error code "OOPS"`},
		"unknown field":    {yaml: validEngine + "colour: blue\n", wantErr: "e.yaml: invalid YAML: line"},
		"empty":            {yaml: "", wantErr: "e.yaml: empty engine manifest"},
		"bad workflow set": {yaml: "name: tiny\nworkflow_settings: [Style]\n", wantErr: "e.yaml: workflow_settings[0]:"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := manifest.ParseEngine("e.yaml", []byte(tt.yaml))
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("ParseEngine() error = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("ParseEngine() error = %v, want it to contain %q", err, tt.wantErr)
			}
		})
	}
}

func TestEngineEntry(t *testing.T) {
	t.Parallel()
	e, err := manifest.ParseEngine("e.yaml", []byte(validEngine))
	if err != nil {
		t.Fatal(err)
	}
	if e.Plugin != "greeter-plugin" || !e.Enabled || !e.TakesCallbacks() {
		t.Errorf("Plugin, Enabled, TakesCallbacks = %q, %v, %v, want greeter-plugin, true, true", e.Plugin, e.Enabled, e.TakesCallbacks())
	}
	for code, want := range map[errcode.Code]bool{errcode.GraphRunner: true, errcode.ExternalService: true, errcode.Chatflow: false, errcode.Validation: false} {
		if got := e.Outage(code); got != want {
			t.Errorf("Outage(%s) = %v, want %v", code, got, want)
		}
	}
	env := map[string]string{"GREETER_KEY": "s3cret"}
	got := e.Resolve(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	want := map[string]string{"greeting": "hello", "api_url": "http://127.0.0.1:9", "api_key": "s3cret"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Resolve() (-want +got):\n%s", diff)
	}
	p := e.Jobs["greeting"]
	if p.MaxRetries != 2 || p.Timeout != 30*time.Second || p.BackoffFor(3) != 4*time.Second || p.ErrorCode != errcode.GraphRunner {
		t.Errorf("Jobs[greeting] = %+v", p)
	}
	if got := engine.CallbackPath(e.Callback); got != "/api/webhooks/graph-callback" {
		t.Errorf("CallbackPath(%q) = %q", e.Callback, got)
	}
}

// TestLoadEngineRegistry: a workflow names an engine of the registry; an unknown engine, a missing
// workflow setting and two entries declaring one job type are refused with the file and field; a
// disabled engine is accepted.
func TestLoadEngineRegistry(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, body string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("engines/greeter.yaml", validEngine)
	write("engines/off.yaml", "name: off\nenabled: false\n")
	write("engines/jobber.yaml", "name: jobber\nworkflows: false\n")
	write("greeting.yaml", "id: greeting\nname: G\nversion: '1'\nengine: greeter\nsettings: {style: warm}\nsteps: [{id: a, agent: script_writer}]\n")
	write("quiet.yaml", "id: quiet\nname: Q\nversion: '1'\nengine: off\nsteps: [{id: a, agent: script_writer}]\n")
	reg, err := manifest.Load(dir)
	if err != nil {
		t.Fatalf("Load() error = %v", err)
	}
	if diff := cmp.Diff([]string{"greeter", "jobber", "node", "off"}, reg.Engines()); diff != "" {
		t.Errorf("Engines() (-want +got):\n%s", diff)
	}
	if e, ok := reg.Engine("off"); !ok || e.Enabled {
		t.Errorf(`Engine("off") = %+v, %v, want disabled`, e, ok)
	}
	if p, e, ok := reg.Job("greeting"); !ok || e.Name != "greeter" || p.Timeout != 30*time.Second {
		t.Errorf(`Job("greeting") = %+v, %v, %v`, p, e, ok)
	}

	write("nope.yaml", "id: nope\nname: N\nversion: '1'\nengine: greeter2\nsteps: [{id: a, agent: script_writer}]\n")
	write("jobs.yaml", "id: jobs\nname: J\nversion: '1'\nengine: jobber\nsteps: [{id: a, agent: script_writer}]\n")
	write("bare.yaml", "id: bare\nname: B\nversion: '1'\nengine: greeter\nsteps: [{id: a, agent: script_writer}]\n")
	write("engines/twin.yaml", "name: twin\njobs: {greeting: {timeout: 1s}}\n")
	_, err = manifest.Load(dir)
	if err == nil {
		t.Fatal("Load() of an unknown engine, a missing setting and a job declared twice = nil error")
	}
	for _, want := range []string{
		filepath.Join(dir, "engines", "twin.yaml") + ": jobs.greeting: job type is also declared by " + filepath.Join(dir, "engines", "greeter.yaml"),
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Load() error = %v, want it to contain %q", err, want)
		}
	}
	if err := os.Remove(filepath.Join(dir, "engines", "twin.yaml")); err != nil {
		t.Fatal(err)
	}
	_, err = manifest.Load(dir)
	for _, want := range []string{
		filepath.Join(dir, "nope.yaml") + `: engine: unknown engine "greeter2": it needs an entry engines/greeter2.yaml in the engine registry (known: node, greeter, jobber, off)`,
		filepath.Join(dir, "jobs.yaml") + `: engine: engine "jobber" runs no workflows, only the jobs of generator steps (` + filepath.Join(dir, "engines", "jobber.yaml") + ": workflows: false)",
		filepath.Join(dir, "bare.yaml") + ": settings.style: is required for engine greeter",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Load() error = %v, want it to contain %q", err, want)
		}
	}
}
