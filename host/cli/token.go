package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/reelforge/reelforge/host/app"
	"github.com/reelforge/reelforge/host/auth"
	"github.com/reelforge/reelforge/host/store"
)

// tokenCreate: token create --name N --scope automation|admin [--user EMAIL]. The key is printed
// once, on stdout, alone on its line; nothing keeps it but its hash.
func (e *env) tokenCreate(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("token create", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	name := fs.String("name", "", "the key's name, shown as triggered_by of the runs it starts (required)")
	scope := fs.String("scope", "", "automation (scheduler API, orchestrator, notification routes) or admin (required)")
	user := fs.String("user", "", "with --scope admin: the email of the admin account the key acts as")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return fmt.Errorf("%w: token create takes no arguments, got %q", errUsage, pos)
	}
	if *name == "" || *scope == "" {
		return fmt.Errorf("%w: --name and --scope are required", errUsage)
	}
	st, err := app.OpenStore(ctx, e.cfg, e.log)
	if err != nil {
		return err
	}
	defer st.Close()
	p := auth.CreateKeyParams{Name: *name, Scope: *scope, CreatedBy: "cli"}
	if *scope == store.ScopeAdmin {
		if *user == "" {
			return fmt.Errorf("%w: --scope admin needs --user (an admin account's email)", errUsage)
		}
		u, err := st.GetUserByEmail(ctx, *user)
		if err != nil {
			return fmt.Errorf("token create: user %s: %w", *user, err)
		}
		p.UserID = u.ID
	}
	key, k, err := auth.CreateKey(ctx, st, p)
	if err != nil {
		return fmt.Errorf("token create: %w", err)
	}
	fmt.Fprintf(e.stderr, "created API key %s name=%s scope=%s; it is shown only now:\n", k.ID, k.Name, k.Scope)
	fmt.Fprintln(e.stdout, key)
	return nil
}

// tokenList: token list — every key with its scope, last use and revocation.
func (e *env) tokenList(ctx context.Context, args []string) error {
	if len(args) > 0 {
		return fmt.Errorf("%w: token list takes no arguments", errUsage)
	}
	st, err := app.OpenStore(ctx, e.cfg, e.log)
	if err != nil {
		return err
	}
	defer st.Close()
	keys, err := st.ListAPIKeys(ctx)
	if err != nil {
		return fmt.Errorf("token list: %w", err)
	}
	w := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "ID\tNAME\tSCOPE\tPREFIX\tCREATED\tLAST USED\tREVOKED")
	for _, k := range keys {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", k.ID, k.Name, k.Scope, k.Prefix,
			k.CreatedAt.UTC().Format(time.RFC3339), orNever(k.LastUsedAt), orNever(k.RevokedAt))
	}
	return w.Flush()
}

func orNever(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

// tokenRevoke: token revoke ID|NAME — the next request with that key fails.
func (e *env) tokenRevoke(ctx context.Context, args []string) error {
	if len(args) != 1 {
		return fmt.Errorf("%w: token revoke takes one key id or name", errUsage)
	}
	st, err := app.OpenStore(ctx, e.cfg, e.log)
	if err != nil {
		return err
	}
	defer st.Close()
	k, err := st.RevokeAPIKey(ctx, args[0], time.Now())
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("token revoke: no live key has id or name %q", args[0])
	}
	if err != nil {
		return fmt.Errorf("token revoke: %w", err)
	}
	fmt.Fprintf(e.stdout, "revoked API key %s name=%s\n", k.ID, k.Name)
	return nil
}
