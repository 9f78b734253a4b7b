#!/usr/bin/env bash
# Installs, from Debian's packages, the programs the host's local generators and the tests use.
#
#   scripts/install-tools.sh run    what `make run` needs: espeak-ng (speech), ffmpeg (video and
#                                   ffprobe), poppler-utils (pdftotext, PDF ingestion),
#                                   fonts-noto-cjk (captions in Chinese, Japanese and Korean) and
#                                   fonts-noto-color-emoji (emoji in captions, drawn in colour)
#   scripts/install-tools.sh test   the same plus what the tests run: prometheus (promtool lints
#                                   GET /metrics) and python3 (the example graph runner)
#   scripts/install-tools.sh [all]  the same plus protobuf-compiler (protoc, for `make proto`)
#
# Idempotent: when everything is there it exits at once (one dpkg-query, no apt). As root it runs
# `apt-get update` once and installs only what is missing; without root it installs nothing and
# exits 1 with the exact command to run. A package counts as there when dpkg has it installed
# and its program is on PATH (python3 may also come from elsewhere, e.g. pyenv).
set -euo pipefail

scope=${1:-all}
packages=(espeak-ng ffmpeg poppler-utils fonts-noto-cjk fonts-noto-color-emoji)
case "$scope" in
run) ;;
test) packages+=(prometheus python3) ;;
all) packages+=(prometheus python3 protobuf-compiler) ;;
*)
	echo "usage: $0 [run|test|all]" >&2
	exit 2
	;;
esac
# The command that stands for a package on PATH (fonts have none: dpkg's word is taken).
declare -A provides=([espeak-ng]=espeak-ng [ffmpeg]=ffmpeg [poppler-utils]=pdftotext
	[protobuf-compiler]=protoc [prometheus]=promtool [python3]=python3)

log() { echo "install-tools: $*" >&2; }

# One dpkg-query for every package: "name<TAB>status" for those dpkg knows.
declare -A installed=()
if command -v dpkg-query >/dev/null; then
	while IFS=$'\t' read -r name status; do
		[ "$status" = "install ok installed" ] && installed[$name]=1
	done < <(dpkg-query -W -f='${Package}\t${Status}\n' "${packages[@]}" 2>/dev/null || true)
fi

# A program is there when it is on PATH (wherever it came from); a font package when dpkg has it
# installed, or, without dpkg, when fontconfig knows its font.
declare -A fontname=([fonts-noto-cjk]=':lang=zh-cn' [fonts-noto-color-emoji]='Noto Color Emoji')
present() {
	local p=$1
	if [ -n "${provides[$p]:-}" ]; then
		command -v "${provides[$p]}" >/dev/null
	elif command -v dpkg-query >/dev/null; then
		[ -n "${installed[$p]:-}" ]
	else
		[ -n "$(fc-list "${fontname[$p]}" file 2>/dev/null)" ]
	fi
}

missing=()
for p in "${packages[@]}"; do
	present "$p" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
	exit 0
fi

if ! command -v apt-get >/dev/null; then
	log "missing ${missing[*]}: install them with this system's package manager (the names are Debian's)"
	exit 1
fi
if [ "$(id -u)" != 0 ]; then
	log "missing ${missing[*]}; install them as root with:"
	echo "  sudo apt-get update && sudo apt-get install -y --no-install-recommends ${missing[*]}" >&2
	log "(or: sudo $0 $scope)"
	exit 1
fi

log "installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get -qq update >&2
apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2

for p in "${missing[@]}"; do
	if [ -n "${provides[$p]:-}" ]; then
		command -v "${provides[$p]}" >/dev/null || { log "$p installed but ${provides[$p]} is not on PATH"; exit 1; }
	else
		[ -n "$(fc-list "${fontname[$p]}" file 2>/dev/null)" ] || { log "$p installed but fontconfig does not find its font"; exit 1; }
	fi
done
log "installed ${missing[*]}"
