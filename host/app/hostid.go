package app

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/reelforge/reelforge/host/config"
)

// hostIdentity is who this host is in the leases it holds: HOST_ID, else the id kept in
// DATA_DIR/host_id (generated on first start). Knowing it after a restart, the host takes back its
// previous life's work at once instead of waiting for the leases to run out.
//
// Only one live process may use an id: a second host started on the same DATA_DIR while the first
// lives (DATA_DIR/host.lock is held) gets an id of its own for this life, so it never takes the
// first one's work as its own past (sole is false then). release gives the lock up at shutdown.
func hostIdentity(cfg *config.Config, log *slog.Logger) (id string, release func(), sole bool, err error) {
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return "", nil, false, fmt.Errorf("app: data dir: %w", err)
	}
	id = cfg.HostID
	if id == "" {
		path := filepath.Join(cfg.DataDir, "host_id")
		b, rerr := os.ReadFile(path)
		id = strings.TrimSpace(string(b))
		if rerr != nil || id == "" || strings.ContainsAny(id, "/ \t\n") {
			id = "host-" + randomHex(6)
			if err := os.WriteFile(path, []byte(id+"\n"), 0o600); err != nil {
				return "", nil, false, fmt.Errorf("app: write host id: %w", err)
			}
		}
	}
	release, ok := lockDataDir(filepath.Join(cfg.DataDir, "host.lock"), id)
	if !ok {
		other := id
		id = id + "-" + randomHex(4)
		log.Warn("another live host uses this DATA_DIR and host id: this one takes an id of its own for this life",
			"host_id", other, "this_host_id", id)
	}
	return id, release, ok, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on supported platforms
	return hex.EncodeToString(b)
}
