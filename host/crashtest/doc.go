// Package crashtest kills a real host with SIGKILL while it works and checks what it left: its
// tests build bin/reelforge, start it on a free port with its own DATA_DIR (SQLite, and
// PostgreSQL when TEST_DATABASE_URL is set), start runs (renders among them), ingests and event
// deliveries, SIGKILL it at a random moment, start it again and count the acknowledged work that
// ended lost, duplicated, stuck or orphaned. Every count must be zero.
//
// `make test` runs one round on each database; `make crash-test` runs CRASH_ROUNDS (default 20).
// The package holds only tests.
package crashtest
