package cli

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"strings"

	"github.com/reelforge/reelforge/host/app"
	"github.com/reelforge/reelforge/host/auth"
	"github.com/reelforge/reelforge/host/store"
)

// userCreate: user create --email E [--password P] [--username U] [--admin | --role R].
func (e *env) userCreate(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("user create", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	email := fs.String("email", "", "the account's email (required)")
	password := fs.String("password", "", "8 to 128 characters; omit it to read the first line of standard input")
	username := fs.String("username", "", "display name (default: the email's local part)")
	admin := fs.Bool("admin", false, "make the account an admin (same as --role admin)")
	role := fs.String("role", store.RoleFreeUser, "admin, user (paid) or free_user")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return fmt.Errorf("%w: user create takes no arguments, got %q", errUsage, pos)
	}
	if *admin {
		*role = store.RoleAdmin
	}
	switch *role {
	case store.RoleAdmin, store.RoleUser, store.RoleFreeUser:
	default:
		return fmt.Errorf("%w: --role must be admin, user or free_user", errUsage)
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
