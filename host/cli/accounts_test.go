package cli

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/reelforge/reelforge/host/app"
	"github.com/reelforge/reelforge/host/auth"
)

// TestTokenCommands: token create prints the key once (stdout, alone), the database keeps only
// its hash, list shows it without the key, revoke refuses it from then on.
func TestTokenCommands(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	code, out, errs := run(t, cfg, "", "token", "create", "--name", "n8n", "--scope", "automation")
	key := strings.TrimSpace(out)
	if code != 0 || !strings.HasPrefix(key, auth.KeyPrefix) || strings.Contains(errs, key) {
		t.Fatalf("token create = %d %q %q", code, out, errs)
	}
	st, err := app.OpenStore(t.Context(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	a := auth.New(st, cfg.JWTSecret, 4)
	p, err := a.VerifyKey(t.Context(), key)
	if err != nil || !p.IsAutomation() || p.KeyName != "n8n" || p.UserID != "" {
		t.Errorf("VerifyKey(new key) = %+v, %v", p, err)
	}
	st.Close()

	if code, _, _ := run(t, cfg, "", "token", "create", "--name", "ops", "--scope", "admin"); code != ExitUsage {
		t.Errorf("admin key without --user = %d, want %d", code, ExitUsage)
	}
	if code, _, _ := run(t, cfg, "", "token", "create", "--name", "n8n", "--scope", "automation"); code != ExitFailure {
		t.Errorf("second live key named n8n = %d, want %d", code, ExitFailure)
	}
	code, out, _ = run(t, cfg, "", "token", "list")
	if code != 0 || !strings.Contains(out, "n8n") || !strings.Contains(out, "automation") || strings.Contains(out, key) {
		t.Errorf("token list = %d %q", code, out)
	}
	if code, out, errs := run(t, cfg, "", "token", "revoke", "n8n"); code != 0 || !strings.Contains(out, "revoked") {
		t.Fatalf("token revoke = %d %q %q", code, out, errs)
	}
	st, err = app.OpenStore(t.Context(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := auth.New(st, cfg.JWTSecret, 4).VerifyKey(t.Context(), key); err == nil {
		t.Errorf("VerifyKey(revoked key) passed")
	}
}
