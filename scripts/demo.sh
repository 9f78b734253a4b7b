#!/usr/bin/env bash
# make demo: registers (or logs in) a demo user on a running host, uploads every document of
# testdata/kb-demo/docs into the source "kb-demo", runs the 40-question eval and prints the search's
# hit rate, how many answers hold the expected answer, and how many out-of-domain questions are
# answered "not found", each beside its target. The host must be running: make run (BASE defaults to http://localhost:3001).
# Environment: BASE, DEMO_EMAIL (demo@reelforge.local), DEMO_PASSWORD (demo-password-1).
set -euo pipefail

BASE="${BASE:-http://localhost:3001}"
EMAIL="${DEMO_EMAIL:-demo@reelforge.local}"
PASSWORD="${DEMO_PASSWORD:-demo-password-1}"
DOCS="$(cd "$(dirname "$0")/.." && pwd)/testdata/kb-demo/docs"

command -v jq >/dev/null || { echo "demo: jq is required" >&2; exit 1; }
curl -fsS "$BASE/health" >/dev/null || { echo "demo: no host at $BASE (start it with: make run)" >&2; exit 1; }

body=$(jq -n --arg e "$EMAIL" --arg p "$PASSWORD" '{email: $e, password: $p, username: "demo"}')
token=$(curl -sS -X POST "$BASE/api/auth/register" -H 'Content-Type: application/json' -d "$body" | jq -r '.data.token // empty')
if [ -z "$token" ]; then
	token=$(curl -sS -X POST "$BASE/api/auth/login" -H 'Content-Type: application/json' -d "$body" | jq -r '.data.token // empty')
fi
[ -n "$token" ] || { echo "demo: cannot register or log in $EMAIL" >&2; exit 1; }
echo "demo user: $EMAIL"

for f in "$DOCS"/*.md; do
	res=$(curl -sS -X POST "$BASE/api/knowledge/upload" -H "Authorization: Bearer $token" \
		-F "file=@$f;type=text/markdown" -F "title=$(basename "$f" .md)" -F "source_name=kb-demo" -F "visibility=private")
	echo "$res" | jq -r --arg f "$(basename "$f")" \
		'"  \($f): \(.data.document.parse_status // .error.message) chunks \(.data.chunks_count // 0)\(if .data.duplicate then " (already ingested)" else "" end)"'
done

res=$(curl -sS -X POST "$BASE/api/knowledge/eval/run-search" -H "Authorization: Bearer $token" \
	-H 'Content-Type: application/json' -d '{"source_name": "kb-demo", "top_k": 5, "answers": true}')
echo "$res" | jq -r '.data.by_scenario | to_entries[] | "  \(.key): \(.value.hits)/\(.value.total)"'
echo "$res" | jq -r '"eval: \(.data.hits)/\(.data.total) hit_rate \(.data.hit_rate) mrr \(.data.mrr) p95 \(.data.p95_ms) ms"'
echo "$res" | jq -r '[.data.items[] | select(.hit | not) | .id] | if length > 0 then "missed: \(join(", "))" else empty end'
echo "$res" | jq -r '.data.answers | "answers: \(.correct)/\(.total) hold the expected answer (target \(.target)/40)"'
echo "$res" | jq -r '[.data.items[] | select(.answer_correct == false) | .id] | if length > 0 then "wrong answers: \(join(", "))" else empty end'
echo "$res" | jq -r '.data.out_of_domain | "out of domain: \(.not_found)/\(.total) answered not found (target \(.total)/\(.total))\(if (.misses | length) > 0 then ", answered anyway: " + (.misses | join(", ")) else "" end)"'
