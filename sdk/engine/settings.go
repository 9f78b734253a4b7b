package engine

import (
	"encoding/json"
	"maps"
	"os"

	"github.com/reelforge/reelforge/sdk/errcode"
)

// SettingsEnv is the environment variable through which the host hands a plugin the settings of
// its engine entry (manifests/engines/<name>.yaml), as one JSON object of strings.
const SettingsEnv = "REELFORGE_SETTINGS"

// Settings returns the settings the host gave this plugin from its engine entry, with the
// environment variables they name already looked up (secrets included: never log them). A plugin
// started without the host (a test, by hand) gets an empty map.
func Settings() map[string]string {
	out := map[string]string{}
	if raw := os.Getenv(SettingsEnv); raw != "" {
		_ = json.Unmarshal([]byte(raw), &out) // the host writes it; malformed means none
	}
	return out
}

// SettingsEnvValue is the SettingsEnv entry (NAME=value) that hands settings to a plugin; the host
// adds it to the plugin's environment.
func SettingsEnvValue(settings map[string]string) string {
	b, _ := json.Marshal(settings) // a map of strings always marshals
	return SettingsEnv + "=" + string(b)
}

// CheckRun refuses a Run without a request, a host or a run id (VALIDATION_ERROR): the first check
// of every engine's Run.
func CheckRun(req *RunRequest, h Host) error {
	if req == nil || h == nil {
		return errcode.New(errcode.Validation, "a run request and a host are required")
	}
	if req.RunID == "" {
		return errcode.Invalid("run_id", "is required")
	}
	return nil
}

// DecodeSettings decodes the workflow's settings for engine name (Workflow.Settings, from its
// manifest) into v, leaving v as it is when there are none. Settings that do not decode are a
// VALIDATION_ERROR.
func (r *RunRequest) DecodeSettings(name string, v any) error {
	if len(r.Workflow.Settings) == 0 {
		return nil
	}
	if err := json.Unmarshal(r.Workflow.Settings, v); err != nil {
		return errcode.E(name+".Run", errcode.Validation, "the workflow's "+name+" settings are not valid", err)
	}
	return nil
}

// DecodeRun is CheckRun, then DecodeSettings of the workflow's settings for engine name into v:
// the first step of the Run of an engine whose manifests carry settings.
func DecodeRun(req *RunRequest, h Host, name string, v any) error {
	if err := CheckRun(req, h); err != nil {
		return err
	}
	return req.DecodeSettings(name, v)
}

// DecodeCallback refuses a Callback without a request or a host, then decodes the callback's payload
// into v. Both failures are a VALIDATION_ERROR; a payload's names the <name>-callback body. The
// first step of the Callback of an engine whose tool calls back (CapCallbacks).
func DecodeCallback(req *CallbackRequest, h Host, name string, v any) error {
	if req == nil || h == nil {
		return errcode.New(errcode.Validation, "a callback request and a host are required")
	}
	if err := json.Unmarshal(req.Payload, v); err != nil {
		return errcode.E(name+".Callback", errcode.Validation, "the "+name+"-callback body is not valid JSON of the expected shape", err)
	}
	return nil
}

// MergedInputs is a copy of the run's inputs with the resume input (if any) laid over them: what an
// engine hands an external tool, which starts the run again on a resume.
func (r *RunRequest) MergedInputs() map[string]any {
	inputs := maps.Clone(r.Inputs)
	if inputs == nil {
		inputs = map[string]any{}
	}
	maps.Copy(inputs, r.ResumeInput)
	return inputs
}
