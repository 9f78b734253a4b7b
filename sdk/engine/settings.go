package engine

import (
	"encoding/json"
	"os"
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
		_ = json.Unmarshal([]byte(raw), &out) //nolint:errcheck // the host writes it; malformed means none
	}
	return out
}

// SettingsEnvValue is the SettingsEnv entry (NAME=value) that hands settings to a plugin; the host
// adds it to the plugin's environment.
func SettingsEnvValue(settings map[string]string) string {
	b, _ := json.Marshal(settings) //nolint:errcheck // a map of strings always marshals
	return SettingsEnv + "=" + string(b)
}
