#!/usr/bin/env bash
# Installs Debian's chromium, the headless browser of `make e2e-browser`, when it is missing.
#
# Idempotent: when /usr/bin/chromium (or $CHROMIUM) runs it prints its version and exits. As root
# it runs `apt-get update` and installs the package; without root it installs nothing and exits 1
# with the command to run.
set -euo pipefail

chromium=${CHROMIUM:-/usr/bin/chromium}
log() { echo "install-browser: $*" >&2; }

if [ -x "$chromium" ] && "$chromium" --version >/dev/null 2>&1; then
	"$chromium" --version 2>/dev/null | sed -n 1p
	exit 0
fi
if [ "$(id -u)" != 0 ]; then
	log "chromium is missing; run as root: apt-get update && apt-get install -y --no-install-recommends chromium"
	exit 1
fi
log "installing chromium (Debian's package)"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends chromium fonts-noto-cjk >/dev/null
"$chromium" --version | sed -n 1p
