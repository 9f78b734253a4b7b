package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/reelforge/reelforge/host/app"
	"github.com/reelforge/reelforge/host/auth"
	"github.com/reelforge/reelforge/host/store"
)

// userCreate: user create --email E [--password P] [--username U] [--admin | --role R].
func (e *env) userCreate(ctx context.Context, args []string) error {
	fs := e.flags("user create")
	email := fs.String("email", "", "the account's email (required)")
	password := fs.String("password", "", "8 to 128 characters; omit it to read the first line of standard input")
	username := fs.String("username", "", "display name (default: the email's local part)")
	admin := fs.Bool("admin", false, "make the account an admin (same as --role admin)")
	role := fs.String("role", store.RoleFreeUser, "admin, user (paid) or free_user")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := noArgs(fs, pos); err != nil {
		return err
	}
	if *admin {
		*role = store.RoleAdmin
	}
	if err := validRole(*role); err != nil {
		return err
	}
	if *email == "" {
		return fmt.Errorf("%w: --email is required", errUsage)
	}
	if *username == "" {
		*username, _, _ = strings.Cut(*email, "@")
	}
	if *password == "" {
		sc := bufio.NewScanner(e.stdin)
		if sc.Scan() {
			*password = strings.TrimRight(sc.Text(), "\r")
		}
		if *password == "" {
			return fmt.Errorf("%w: no --password and nothing on standard input", errUsage)
		}
	}
	if err := e.cfg.EnsureJWTSecret(); err != nil {
		return err
	}
	st, err := app.OpenStore(ctx, e.cfg, e.log)
	if err != nil {
		return err
	}
	defer st.Close()
	sess, err := auth.New(st, e.cfg.JWTSecret, 0).Register(ctx, *email, *password, *username)
	if err != nil {
		return fmt.Errorf("user create: %w", err)
	}
	u := sess.User
	if *role != u.Role {
		if err := st.SetUserRole(ctx, u.ID, *role); err != nil {
			return fmt.Errorf("user create: set role: %w", err)
		}
		u.Role = *role
	}
	fmt.Fprintf(e.stdout, "created user %s <%s> username=%s role=%s\n", u.ID, u.Email, u.Username, u.Role)
	return nil
}

// userRole: user role --email E --role R. The account's running sessions take the new role within
// auth.AccountTTL: a request's role is the account's, read again at most that often, never the
// token's claim.
func (e *env) userRole(ctx context.Context, args []string) error {
	fs := e.flags("user role")
	email := fs.String("email", "", "the account's email (required)")
	role := fs.String("role", "", "admin, user (paid) or free_user (required)")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := noArgs(fs, pos); err != nil {
		return err
	}
	if *email == "" || *role == "" {
		return fmt.Errorf("%w: --email and --role are required", errUsage)
	}
	if err := validRole(*role); err != nil {
		return err
	}
	st, err := app.OpenStore(ctx, e.cfg, e.log)
	if err != nil {
		return err
	}
	defer st.Close()
	u, err := st.GetUserByEmail(ctx, *email)
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("user role: no account has the email %q", *email)
	}
	if err != nil {
		return fmt.Errorf("user role: %w", err)
	}
	if u.Role == *role {
		fmt.Fprintf(e.stdout, "user %s <%s> already has role=%s\n", u.ID, u.Email, u.Role)
		return nil
	}
	if err := st.SetUserRole(ctx, u.ID, *role); err != nil {
		return fmt.Errorf("user role: %w", err)
	}
	fmt.Fprintf(e.stdout, "user %s <%s> role=%s (was %s)\n", u.ID, u.Email, *role, u.Role)
	return nil
}

// validRole refuses a role the accounts do not have.
func validRole(role string) error {
	switch role {
	case store.RoleAdmin, store.RoleUser, store.RoleFreeUser:
		return nil
	}
	return fmt.Errorf("%w: --role must be admin, user or free_user", errUsage)
}

// tokenCreate: token create --name N --scope automation|admin [--user EMAIL]. The key is printed
// once, on stdout, alone on its line; nothing keeps it but its hash.
func (e *env) tokenCreate(ctx context.Context, args []string) error {
	fs := e.flags("token create")
	name := fs.String("name", "", "the key's name, shown as triggered_by of the runs it starts (required)")
	scope := fs.String("scope", "", "automation (scheduler API, orchestrator, notification routes) or admin (required)")
	user := fs.String("user", "", "with --scope admin: the email of the admin account the key acts as")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := noArgs(fs, pos); err != nil {
		return err
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
