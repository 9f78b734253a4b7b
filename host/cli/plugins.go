package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/reelforge/reelforge/host/app"
	"github.com/reelforge/reelforge/host/capability"
	"github.com/reelforge/reelforge/host/config"
	"github.com/reelforge/reelforge/host/manifest"
	"github.com/reelforge/reelforge/host/plugins"
	"github.com/reelforge/reelforge/plugins/generators"
	"github.com/reelforge/reelforge/sdk/engine"
	"github.com/reelforge/reelforge/sdk/errcode"
)

// pluginReport is one line of plugins check.
type pluginReport struct {
	engine, version, api, sum, health string
	workflows                         []string
	problem                           bool
}

// pluginsCheck: load every manifest, start each engine's plugin, print name, version, sha256 and
// health; a problem makes the exit code non-zero.
func (e *env) pluginsCheck(ctx context.Context, args []string) error {
	fs := e.flags("plugins check")
	timeout := fs.Duration("timeout", 10*time.Second, "for each plugin's start, Info and Health")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := noArgs(fs, pos); err != nil {
		return err
	}
	reg, err := manifest.Load(e.cfg.ManifestDir)
	if err != nil {
		return fmt.Errorf("plugins check: manifests of %s: %w", e.cfg.ManifestDir, err)
	}
	workflows := map[string][]string{}
	for _, m := range reg.List() {
		workflows[m.Engine] = append(workflows[m.Engine], m.ID)
	}
	fmt.Fprintf(e.stdout, "manifests: %d in %s; plugins: %s\n", len(reg.List()), e.cfg.ManifestDir, e.cfg.PluginDir)
	var reports []pluginReport
	problems := 0
	for _, name := range reg.Engines() {
		entry, _ := reg.Engine(name) // nil: node without an entry, in process only
		r := checkPlugin(ctx, e.cfg, entry, name, *timeout)
		r.workflows = workflows[name]
		if r.problem {
			problems++
		}
		reports = append(reports, r)
	}
	// The generators engine as the host would run it: not ready while its tools are missing; and
	// the capabilities /health reports, from the same code (app.Capabilities).
	var gen plugins.Detail
	for i, r := range reports {
		if r.engine != generators.Name {
			continue
		}
		gen = reportDetail(r)
		if d := app.GeneratorsDetail(e.cfg, gen); d.State != gen.State {
			reports[i].health, reports[i].problem = d.State+": "+d.Reason, true
			problems++
		}
	}
	writeReports(e.stdout, reports)
	caps := app.Capabilities(e.cfg, gen)
	fmt.Fprintln(e.stdout, "capabilities:")
	for _, name := range capability.Names {
		c := caps[name]
		line := c.State
		if c.Reason != "" {
			line += ": " + c.Reason
		}
		fmt.Fprintf(e.stdout, "  %-15s %s\n", name, line)
	}
	var binaries []string
	for _, en := range reg.EngineList() {
		binaries = append(binaries, en.Plugin)
	}
	for _, extra := range unusedPlugins(e.cfg.PluginDir, binaries) {
		fmt.Fprintf(e.stdout, "note: %s is in the plugin folder but no engine entry (%s/%s) names it\n", extra, e.cfg.ManifestDir, manifest.EnginesDir)
	}
	if problems > 0 {
		return fmt.Errorf("plugins check: %d of %d engines have a problem", problems, len(reports))
	}
	fmt.Fprintf(e.stdout, "ok: %d engines\n", len(reports))
	return nil
}

// manifestsCheck validates a manifest folder (its workflows and its engines/ registry) as the host
// does at start and on SIGHUP, and prints every problem with its file and field.
func (e *env) manifestsCheck(args []string) error {
	fs := e.flags("manifests check")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	dir := e.cfg.ManifestDir
	switch len(pos) {
	case 0:
	case 1:
		dir = pos[0]
	default:
		return fmt.Errorf("%w: manifests check takes at most one folder", errUsage)
	}
	reg, err := manifest.Load(dir)
	if err != nil {
		var problems []string
		for _, line := range strings.Split(err.Error(), "\n") {
			problems = append(problems, "  "+line)
		}
		return fmt.Errorf("manifests check: %s is refused:\n%s", dir, strings.Join(problems, "\n"))
	}
	var names []string
	for _, en := range reg.EngineList() {
		state := "enabled"
		if !en.Enabled {
			state = "disabled"
		}
		names = append(names, en.Name+" ("+state+")")
	}
	fmt.Fprintf(e.stdout, "ok: %d workflows and %d engines in %s: %s\n", len(reg.List()), len(names), dir, strings.Join(names, ", "))
	return nil
}

// checkPlugin starts the plugin binary of engine entry en (nil: node without an entry) with its
// sha256 pinned and its settings, asks Info and Health, and stops it.
func checkPlugin(ctx context.Context, cfg *config.Config, en *manifest.Engine, name string, timeout time.Duration) pluginReport {
	r := pluginReport{engine: name, version: "-", api: "-", sum: "-"}
	if en == nil {
		r.health = "disabled: no engine entry (runs in process)"
		return r
	}
	if !en.Enabled {
		r.health = "disabled: in " + en.File + " (workflows run on their fallback)"
		return r
	}
	path := filepath.Join(cfg.PluginDir, en.Plugin)
	sum, err := plugins.FileSHA256(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) && name == manifest.EngineNode {
			r.health = "disabled: no plugin binary (runs in process)"
			return r
		}
		r.health, r.problem = "missing: "+path, true
		if !errors.Is(err, os.ErrNotExist) {
			r.health = "unreadable: " + err.Error()
		}
		return r
	}
	r.sum = sum
	if en.SHA256 != "" && en.SHA256 != sum {
		r.health, r.problem = fmt.Sprintf("sha256 %s, but %s pins %s", sum, en.File, en.SHA256), true
		return r
	}
	c, err := engine.NewClient(engine.ClientConfig{Name: "engine." + name, Path: path, SHA256: sum, StartTimeout: timeout,
		Env: []string{engine.SettingsEnvValue(app.EngineSettings(en, cfg))}})
	if err != nil {
		r.health, r.problem = "does not start: "+cause(err), true
		return r
	}
	defer c.Kill()
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	info, err := c.Engine().Info(cctx)
	if err != nil {
		r.health, r.problem = "Info failed: "+cause(err), true
		return r
	}
	r.version, r.api = info.Version, fmt.Sprint(info.APIVersion)
	if info.Name != name {
		r.health, r.problem = fmt.Sprintf("disabled: reports engine %q, want %q", info.Name, name), true
		return r
	}
	if info.APIVersion != engine.APIVersion {
		r.health, r.problem = fmt.Sprintf("disabled: speaks engine contract version %d, this host speaks %d", info.APIVersion, engine.APIVersion), true
		return r
	}
	// The states of /health's engine_details: a plugin declaring a tool check is ready only while
	// its tool answers.
	err = c.Engine().Health(cctx)
	switch {
	case err == nil:
		r.health = "ready"
	case !slices.Contains(info.Capabilities, engine.CapToolHealth):
		r.health, r.problem = "unhealthy: "+cause(err), true
	case errcode.Of(err) == errcode.Validation:
		r.health = "unconfigured: " + cause(err) + " (its workflows run on their fallback)"
	default:
		r.health, r.problem = "degraded: "+cause(err)+" (its workflows run on their fallback)", true
	}
	return r
}

// reportDetail is the engine state (plugins.Detail*) a plugins check line stands for.
func reportDetail(r pluginReport) plugins.Detail {
	state, reason, _ := strings.Cut(r.health, ": ")
	switch state {
	case plugins.DetailReady, plugins.DetailDisabled, plugins.DetailUnconfigured:
		return plugins.Detail{State: state, Reason: reason}
	}
	return plugins.Detail{State: plugins.DetailDegraded, Reason: r.health}
}

// cause is err with its internal cause, for an operator's eyes.
func cause(err error) string {
	if e := errcode.As(err); e != nil && e.Err != nil {
		return e.Message() + ": " + e.Err.Error()
	}
	return err.Error()
}

func writeReports(w io.Writer, rs []pluginReport) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ENGINE\tVERSION\tAPI\tSHA256\tSTATE\tWORKFLOWS")
	for _, r := range rs {
		wf := strings.Join(r.workflows, ",")
		if wf == "" {
			wf = "(fallback only)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.engine, r.version, r.api, r.sum, r.health, wf)
	}
	tw.Flush()
}

// unusedPlugins lists *-plugin files of dir that no engine entry names.
func unusedPlugins(dir string, binaries []string) []string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), "-plugin") && !e.IsDir() && !slices.Contains(binaries, e.Name()) {
			out = append(out, e.Name())
		}
	}
	return out
}
