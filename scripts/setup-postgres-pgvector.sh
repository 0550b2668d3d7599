#!/usr/bin/env bash
# Installs the pgvector extension into the local PostgreSQL on a Debian machine (bookworm or later) and makes sure
# the server is running. Debian bookworm has no postgresql-15-pgvector package, so it is built from Debian trixie's
# source package against the installed server. Idempotent: does nothing when the extension is already installed.
# Usage: sudo bash scripts/setup-postgres-pgvector.sh   (needs root: apt-get and make install)
set -euo pipefail

log() { printf 'setup-postgres-pgvector: %s\n' "$*"; }

pg_version() {
  if command -v pg_lsclusters >/dev/null 2>&1 && [ -n "$(pg_lsclusters -h 2>/dev/null)" ]; then
    pg_lsclusters -h | awk 'NR==1 {print $1}'
  else
    ls /usr/lib/postgresql 2>/dev/null | sort -n | tail -n 1
  fi
}

ensure_server_running() {
  command -v pg_lsclusters >/dev/null 2>&1 || return 0
  pg_lsclusters -h | while read -r version cluster _port status _rest; do
    if [ "$status" != "online" ]; then
      log "starting PostgreSQL $version/$cluster"
      pg_ctlcluster --skip-systemctl-redirect "$version" "$cluster" start || true
    fi
  done
}

PG_VERSION="$(pg_version)"
if [ -z "$PG_VERSION" ]; then
  log "no PostgreSQL server found; installing Debian's postgresql package"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
  PG_VERSION="$(pg_version)"
fi
ensure_server_running

EXTENSION_DIR="/usr/share/postgresql/${PG_VERSION}/extension"
if [ -f "${EXTENSION_DIR}/vector.control" ]; then
  log "pgvector is already installed for PostgreSQL ${PG_VERSION}"
  exit 0
fi

if apt-cache show "postgresql-${PG_VERSION}-pgvector" >/dev/null 2>&1; then
  log "installing postgresql-${PG_VERSION}-pgvector"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "postgresql-${PG_VERSION}-pgvector" >/dev/null
  exit 0
fi

log "building pgvector from Debian trixie's source package for PostgreSQL ${PG_VERSION}"
MIRROR="$( {
  grep -hE '^URIs:' /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '{print $2}'
  grep -hE '^deb ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null | awk '{print $2}'
} | grep -E '/debian/?$' | head -n 1 | sed 's#/$##' || true)"
MIRROR="${MIRROR:-http://deb.debian.org/debian}"
SOURCES_FILE=/etc/apt/sources.list.d/engram-trixie-src.list
echo "deb-src ${MIRROR} trixie main" > "$SOURCES_FILE"
trap 'rm -f "$SOURCES_FILE"' EXIT
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq dpkg-dev make gcc "postgresql-server-dev-${PG_VERSION}" >/dev/null

BUILD_DIR="$(mktemp -d)"
(
  cd "$BUILD_DIR"
  apt-get source -qq pgvector >/dev/null
  cd pgvector-*/
  make -s PG_CONFIG="/usr/lib/postgresql/${PG_VERSION}/bin/pg_config" >/dev/null
  make -s PG_CONFIG="/usr/lib/postgresql/${PG_VERSION}/bin/pg_config" install >/dev/null
)
rm -rf "$BUILD_DIR"
log "pgvector installed for PostgreSQL ${PG_VERSION}"
