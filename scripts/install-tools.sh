#!/usr/bin/env bash
# Installs, from Debian's packages, the programs the tests and the local
# generators use: espeak-ng (speech), ffmpeg (video), poppler-utils (pdftotext),
# protobuf-compiler (protoc, for `make proto`), prometheus (promtool, which lints
# GET /metrics in the tests), python3, and fonts-noto-cjk (Noto Sans CJK: the
# captions of Chinese, Japanese and Korean scripts; the renderer refuses a caption
# no installed font covers rather than draw boxes).
# Idempotent: when every package is installed it exits without touching apt.
# Runs `apt-get update` once, and only when something is missing.
set -euo pipefail

packages=(espeak-ng ffmpeg poppler-utils protobuf-compiler prometheus python3 fonts-noto-cjk)
# A command that, when on PATH, stands for the package (python3 may come from pyenv).
declare -A provides=([espeak-ng]=espeak-ng [ffmpeg]=ffmpeg [poppler-utils]=pdftotext
	[protobuf-compiler]=protoc [prometheus]=promtool [python3]=python3)

log() { echo "install-tools: $*" >&2; }

missing=()
for p in "${packages[@]}"; do
	if dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q '^install ok installed$'; then
		continue
	fi
	if [ "$p" = python3 ] && command -v python3 >/dev/null; then
		continue
	fi
	missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
	log "all present"
	exit 0
fi

if [ "$(id -u)" != 0 ]; then
	log "missing ${missing[*]}; run as root (or: sudo apt-get install ${missing[*]})"
	exit 1
fi

log "installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get -qq update >&2
apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2

for p in "${missing[@]}"; do
	if [ "$p" = fonts-noto-cjk ]; then
		[ -n "$(fc-list :lang=zh-cn file 2>/dev/null)" ] || { log "$p installed but fontconfig finds no Chinese font"; exit 1; }
		continue
	fi
	command -v "${provides[$p]}" >/dev/null || { log "$p installed but ${provides[$p]} not on PATH"; exit 1; }
done
log "installed ${missing[*]}"
