#!/usr/bin/env bash
# Installs the pgvector extension (0.8.0) into the local PostgreSQL server.
#
# pgvector is not packaged for Debian bookworm. We build Debian trixie's
# *source* package against bookworm's PostgreSQL, as shared/DESIGN.md
# ("Dependency notes") describes:
#   - a private apt configuration (its own sources list with a single trixie
#     deb-src line, its own state and cache dirs) so the system's sources are
#     never touched;
#   - the server headers come from `apt-get download postgresql-server-dev-NN`
#     unpacked with `dpkg -x` into a scratch folder (installing that package
#     pulls clang and may upgrade the running server);
#   - make && make install with PG_CONFIG, with_llvm=no and includedir_server
#     pointed at the scratch folder.
# Idempotent: exits at once when the server already offers the extension.
#
# Environment: PGHOST (127.0.0.1), PGPORT (5432), PGUSER (postgres),
# PG_MAJOR (the cluster under /etc/postgresql), PGVECTOR_DEB_VERSION (0.8.0-1),
# DEBIAN_MIRROR (http://deb.debian.org/debian).
set -euo pipefail

export PGHOST="${PGHOST:-127.0.0.1}" PGPORT="${PGPORT:-5432}" PGUSER="${PGUSER:-postgres}"
export PGOPTIONS="${PGOPTIONS:--c client_min_messages=warning}"
PG_MAJOR="${PG_MAJOR:-$(ls /etc/postgresql | sort -V | tail -n1)}"
PG_CONFIG="/usr/lib/postgresql/${PG_MAJOR}/bin/pg_config"
PGVECTOR_DEB_VERSION="${PGVECTOR_DEB_VERSION:-0.8.0-1}"
DEBIAN_MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"

log() { echo "install-pgvector: $*" >&2; }

available() {
	[ "$(psql -X -tAc "select 1 from pg_available_extensions where name='vector'" 2>/dev/null)" = "1" ]
}

if available; then
	log "vector extension already available; nothing to do"
	exit 0
fi

[ -x "$PG_CONFIG" ] || { log "no $PG_CONFIG"; exit 1; }
for tool in apt-get dpkg-source dpkg make gcc; do
	command -v "$tool" >/dev/null || { log "missing $tool"; exit 1; }
done

work="$(mktemp -d /tmp/pgvector-build.XXXXXX)"
trap 'rm -rf "$work"' EXIT
start=$SECONDS

# --- private apt configuration: one trixie deb-src line, nothing else --------
apt_dir="$work/apt"
mkdir -p "$apt_dir"/{sources.list.d,preferences.d,state/lists/partial,cache/archives/partial}
echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-trixie-stable.gpg,/usr/share/keyrings/debian-archive-keyring.gpg] ${DEBIAN_MIRROR} trixie main" \
	>"$apt_dir/sources.list"
apt_private=(
	-o "Dir::Etc::SourceList=$apt_dir/sources.list"
	-o "Dir::Etc::SourceParts=$apt_dir/sources.list.d"
	-o "Dir::Etc::Preferences=$apt_dir/preferences"
	-o "Dir::Etc::PreferencesParts=$apt_dir/preferences.d"
	-o "Dir::State=$apt_dir/state"
	-o "Dir::State::Lists=$apt_dir/state/lists"
	-o "Dir::Cache=$apt_dir/cache"
	-o "Dir::Cache::pkgcache="
	-o "Dir::Cache::srcpkgcache="
	-o "APT::Sandbox::User=root"
	-o "Acquire::Languages=none"
	-o "Debug::NoLocking=1"
)

log "fetching trixie source index (private apt config under $apt_dir)"
apt-get -qq "${apt_private[@]}" update >&2

src="$work/src"
mkdir -p "$src"
(
	cd "$src"
	if ! apt-get -q "${apt_private[@]}" source --download-only "pgvector=${PGVECTOR_DEB_VERSION}" >&2; then
		log "pgvector ${PGVECTOR_DEB_VERSION} not offered by trixie; taking its current pgvector"
		apt-get -q "${apt_private[@]}" source --download-only pgvector >&2
	fi
	dsc="$(ls ./*.dsc | sed -n 1p)"
	dpkg-source --no-check -x "$dsc" pgvector >&2
)
log "source: $(ls "$src"/*.dsc | xargs -n1 basename)"

# --- server headers, unpacked into a scratch folder (not installed) ----------
hdr="$work/pgdev"
mkdir -p "$hdr" "$work/debs"
server_version="$(dpkg-query -W -f='${Version}' "postgresql-${PG_MAJOR}" 2>/dev/null || true)"
(
	cd "$work/debs"
	if [ -z "$server_version" ] || ! apt-get -q -o APT::Sandbox::User=root download "postgresql-server-dev-${PG_MAJOR}=${server_version}" >&2; then
		log "postgresql-server-dev-${PG_MAJOR}=${server_version} not downloadable; trying apt-get update and the candidate"
		apt-get -qq update >&2 || true
		apt-get -q -o APT::Sandbox::User=root download "postgresql-server-dev-${PG_MAJOR}=${server_version}" >&2 ||
			apt-get -q -o APT::Sandbox::User=root download "postgresql-server-dev-${PG_MAJOR}" >&2
	fi
	dpkg -x ./postgresql-server-dev-*.deb "$hdr"
)
includedir_server="$hdr/usr/include/postgresql/${PG_MAJOR}/server"
[ -f "$includedir_server/postgres.h" ] || { log "no postgres.h under $includedir_server"; exit 1; }
make_vars=(
	"PG_CONFIG=$PG_CONFIG"
	"with_llvm=no"
	"includedir_server=$includedir_server"
)
if [ -d "$hdr/usr/include/postgresql/internal" ] && [ ! -d /usr/include/postgresql/internal ]; then
	make_vars+=("includedir_internal=$hdr/usr/include/postgresql/internal")
fi

# --- build and install -------------------------------------------------------
log "building"
make -C "$src/pgvector" -j"$(nproc)" "${make_vars[@]}" >"$work/build.log" 2>&1 || {
	tail -n 40 "$work/build.log" >&2
	exit 1
}
make -C "$src/pgvector" "${make_vars[@]}" install >>"$work/build.log" 2>&1 || {
	tail -n 40 "$work/build.log" >&2
	exit 1
}

# --- check: create the extension in a throw-away database --------------------
check_db="pgvector_check_$$_${RANDOM}"
psql -X -q -v ON_ERROR_STOP=1 -c "DROP DATABASE IF EXISTS ${check_db}" -c "CREATE DATABASE ${check_db}" >&2
ok=0
psql -X -q -v ON_ERROR_STOP=1 -d "$check_db" \
	-c "CREATE EXTENSION IF NOT EXISTS vector" \
	-c "CREATE TABLE t(v vector(3))" \
	-c "CREATE INDEX ON t USING hnsw (v vector_cosine_ops)" >&2 || ok=1
version="$(psql -X -tAd "$check_db" -c "select extversion from pg_extension where extname='vector'" 2>/dev/null || true)"
psql -X -q -c "DROP DATABASE IF EXISTS ${check_db}" >&2 || true
if [ "$ok" != 0 ]; then
	log "built and installed, but CREATE EXTENSION vector failed"
	exit 1
fi
log "pgvector ${version} installed and checked in $((SECONDS - start)) s"
