// Package cli is the command line of bin/reelforge: serve (the default), migrate, user create/role,
// token create/list/revoke, manifests check, plugins check, kb ingest and queue. host/main.go only hands
// it the arguments and exits with its code.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/reelforge/reelforge/host/app"
	"github.com/reelforge/reelforge/host/config"
)

// Exit codes of Main.
const (
	ExitOK      = 0
	ExitFailure = 1 // the command ran and found a problem
	ExitUsage   = 2 // bad arguments
)

const usage = `usage: reelforge [command]

commands:
  serve                          serve the API (the default)
  migrate                        apply the database migrations and exit
  user create --email E [--password P] [--username U] [--admin | --role R]
                                 create an account (without --password, the first line of
                                 standard input is the password)
  user role --email E --role R   change an account's role (admin, user or free_user); its
                                 signed-in sessions take it within 30 s
  token create --name N --scope automation|admin [--user EMAIL]
                                 issue a long-lived API key (printed once on stdout; an admin
                                 key acts as the admin account --user names)
  token list                     every API key with its scope, last use and revocation
  token revoke ID|NAME           revoke a key: its next request is refused
  manifests check [DIR]          validate the workflow manifests and engine registry of DIR
                                 (default MANIFEST_DIR), as a start or a SIGHUP reload would
  plugins check                  load every manifest of MANIFEST_DIR, start each engine's plugin
                                 from PLUGIN_DIR and print its version, sha256 and health
  kb ingest DIR --user EMAIL [--source NAME] [--project ID] [--visibility V] [--every N]
                                 ingest the supported files under DIR into a knowledge source;
                                 resumable: files the source already holds are skipped
  queue [--state S] [--kind K] [--limit N]
                                 the durable queue's jobs by state, then its most recent jobs
                                 (River's: kind, state, attempts, last error)
`

// errUsage marks an error in the arguments (exit code 2).
var errUsage = errors.New("usage")

// env is what the commands share.
type env struct {
	cfg    *config.Config
	log    *slog.Logger
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
}

// Main runs the command args names and returns the process exit code. Configuration comes from
// the environment (host/config); logs go to stderr, command output to stdout.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	cfg, err := config.Load()
	if err != nil {
		fmt.Fprintln(stderr, "reelforge:", err)
		return ExitFailure
	}
	return Run(ctx, cfg, args, stdin, stdout, stderr)
}

// Run is Main with the configuration given.
func Run(ctx context.Context, cfg *config.Config, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	e := &env{cfg: cfg, log: app.NewLogger(cfg, stderr), stdin: stdin, stdout: stdout, stderr: stderr}
	err := e.dispatch(ctx, args)
	switch {
	case err == nil:
		return ExitOK
	case errors.Is(err, flag.ErrHelp):
		return ExitOK
	case errors.Is(err, errUsage):
		fmt.Fprintln(stderr, "reelforge:", err)
		fmt.Fprint(stderr, usage)
		return ExitUsage
	default:
		fmt.Fprintln(stderr, "reelforge:", err)
		return ExitFailure
	}
}

func (e *env) dispatch(ctx context.Context, args []string) error {
	cmd, rest := "serve", args
	if len(args) > 0 {
		cmd, rest = args[0], args[1:]
	}
	sub := ""
	if len(rest) > 0 {
		sub = rest[0]
	}
	switch {
	case cmd == "serve":
		return e.serve(ctx)
	case cmd == "migrate":
		return e.migrate(ctx)
	case cmd == "user" && sub == "create":
		return e.userCreate(ctx, rest[1:])
	case cmd == "user" && sub == "role":
		return e.userRole(ctx, rest[1:])
	case cmd == "token" && sub == "create":
		return e.tokenCreate(ctx, rest[1:])
	case cmd == "token" && sub == "list":
		return e.tokenList(ctx, rest[1:])
	case cmd == "token" && sub == "revoke":
		return e.tokenRevoke(ctx, rest[1:])
	case cmd == "manifests" && sub == "check":
		return e.manifestsCheck(rest[1:])
	case cmd == "plugins" && sub == "check":
		return e.pluginsCheck(ctx, rest[1:])
	case cmd == "kb" && sub == "ingest":
		return e.kbIngest(ctx, rest[1:])
	case cmd == "queue":
		return e.queueList(ctx, rest)
	case cmd == "help" || cmd == "-h" || cmd == "--help":
		fmt.Fprint(e.stdout, usage)
		return nil
	}
	return fmt.Errorf("%w: unknown command %q", errUsage, strings.TrimSpace(cmd+" "+sub))
}

func (e *env) serve(ctx context.Context) error {
	// The serving GC defaults (GOGC 400, a soft limit of half the memory) are part of what meets
	// make bench's API target (p99 at most 10 ms at 64 clients; the bench applies them too):
	// collecting a fifth as often cost the listing about a sixth less CPU a request. The rule they
	// impose: the heap may grow to five times what is live before a collection, up to the soft
	// limit, so a host does not share its machine's memory with another big process unless
	// GOMEMLIMIT says so. GOGC or GOMEMLIMIT in the environment win.
	if gc, limit := app.TuneGC(); gc != 0 || limit != 0 {
		e.log.Info("garbage collector", "gogc", gc, "memory_limit_bytes", limit)
	}
	h, err := app.NewWaiting(ctx, e.cfg, e.log)
	if err != nil {
		return err
	}
	return h.Run(ctx)
}

func (e *env) migrate(ctx context.Context) error {
	st, err := app.OpenStore(ctx, e.cfg, e.log)
	if err != nil {
		return err
	}
	e.log.Info("migrations applied", "database", st.Name())
	return st.Close()
}

// flags is the flag set of the subcommand name: a parse error is returned (not an exit), and
// usage goes to standard error.
func (e *env) flags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	return fs
}

// noArgs fails with a usage error when a subcommand that takes only flags got more.
func noArgs(fs *flag.FlagSet, pos []string) error {
	if len(pos) > 0 {
		return fmt.Errorf("%w: %s takes no arguments, got %q", errUsage, fs.Name(), pos)
	}
	return nil
}

// parseArgs parses fs over args, allowing flags after positional arguments (`kb ingest DIR --user
// E`); it returns the positional arguments.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, fmt.Errorf("%w: %s", errUsage, err)
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}
