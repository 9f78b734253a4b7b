#!/usr/bin/env bash
# Makes sure the local PostgreSQL is up, creates a fresh throw-away database
# and prints, on stdout, the line a caller evals:
#   export TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/<db>?sslmode=disable
# Everything else goes to stderr. Usage:
#   eval "$(scripts/ensure-postgres.sh)"
#   ... tests ...
#   scripts/ensure-postgres.sh --drop "$TEST_DATABASE_URL"   # or psql -c 'DROP DATABASE ...'
# Environment: PGHOST (127.0.0.1), PGPORT (5432), PGUSER (postgres),
# TEST_DB_NAME (default reelforge_test_<random>), PG_WAIT_SECONDS (60).
set -euo pipefail

export PGHOST="${PGHOST:-127.0.0.1}" PGPORT="${PGPORT:-5432}" PGUSER="${PGUSER:-postgres}"
export PGOPTIONS="${PGOPTIONS:--c client_min_messages=warning}"
wait_seconds="${PG_WAIT_SECONDS:-60}"

log() { echo "ensure-postgres: $*" >&2; }

if [ "${1:-}" = "--drop" ]; then
	url="${2:-${TEST_DATABASE_URL:-}}"
	db="${url##*/}"
	db="${db%%\?*}"
	case "$db" in
	reelforge_test_*) psql -X -q -d postgres -c "DROP DATABASE IF EXISTS \"${db}\" WITH (FORCE)" >&2 ;;
	*) log "refusing to drop '${db}': not a reelforge_test_ database"; exit 1 ;;
	esac
	log "dropped ${db}"
	exit 0
fi

if ! pg_isready -q -h "$PGHOST" -p "$PGPORT"; then
	version="$(ls /etc/postgresql 2>/dev/null | sort -V | tail -n1)"
	if [ -z "$version" ]; then
		log "PostgreSQL is down and no cluster is configured under /etc/postgresql"
		exit 1
	fi
	log "starting PostgreSQL ${version}/main"
	pg_ctlcluster --skip-systemctl-redirect "$version" main start >&2 || true
fi

deadline=$((SECONDS + wait_seconds))
until pg_isready -q -h "$PGHOST" -p "$PGPORT"; do
	if [ "$SECONDS" -ge "$deadline" ]; then
		log "PostgreSQL not ready on ${PGHOST}:${PGPORT} after ${wait_seconds} s"
		exit 1
	fi
	sleep 0.5
done

db="${TEST_DB_NAME:-reelforge_test_$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')}"
case "$db" in
*[!a-z0-9_]*) log "bad database name '${db}'"; exit 1 ;;
esac
psql -X -q -v ON_ERROR_STOP=1 -d postgres \
	-c "DROP DATABASE IF EXISTS \"${db}\" WITH (FORCE)" \
	-c "CREATE DATABASE \"${db}\"" >&2
log "created database ${db}"
echo "export TEST_DATABASE_URL='postgres://${PGUSER}@${PGHOST}:${PGPORT}/${db}?sslmode=disable'"
