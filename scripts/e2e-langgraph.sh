#!/usr/bin/env bash
# Opt-in end-to-end check of the graph engine against a stock LangGraph server (RUNNER_PROTOCOL=langgraph).
#
# Installs the LangGraph.js CLI and library from npm into a cache dir (never system-wide), serves
# the project's own graphs (integrations/langgraph: live_script, short_drama) with `langgraphjs dev`,
# builds and starts the Reelforge host on SQLite with RUNNER_URL pointing at that server, then
# through the host's API:
#   - live, with review: true: every graph node takes LANGGRAPH_E2E_STEP_SECONDS, so the graph runs
#     longer than the graph job timeout of a copy of the manifests (graph.yaml's timeout lowered to
#     LANGGRAPH_E2E_JOB_TIMEOUT); the run pauses at the graph's interrupt() (human_review), is
#     resumed with feedback, completes once (one LangGraph run a posting: two on the thread), and
#     the feedback is in its script;
#   - short_drama: the graph writes the episode, the host's generators render it; the run completes
#     with a video_url, fetched and checked with ffprobe (a video stream, a duration).
# Prints "PASS e2e-langgraph" at the end; exits non-zero on any failure.
#
#   scripts/e2e-langgraph.sh
#
# Environment:
#   LANGGRAPH_HOME             cache dir (default $HOME/.cache/reelforge-langgraph)
#   LANGGRAPH_CLI_VERSION      @langchain/langgraph-cli version (default 1.5.1)
#   LANGGRAPH_VERSION          @langchain/langgraph version (default 1.7.3)
#   LANGGRAPH_E2E_PORT         the LangGraph server's port (default 3190; the host gets +1)
#   LANGGRAPH_E2E_STEP_SECONDS how long each graph node takes (default 2)
#   LANGGRAPH_E2E_JOB_TIMEOUT  the graph job timeout of the manifests' copy (default 3s)
#   LANGGRAPH_E2E_KEEP=1       keep the temp dir (server.log, host.log, answers)
#
# First run: about a minute and 160 MB (npm install); later runs reuse the cache.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
LANGGRAPH_HOME="${LANGGRAPH_HOME:-$HOME/.cache/reelforge-langgraph}"
CLI_VERSION="${LANGGRAPH_CLI_VERSION:-1.5.1}"
LG_VERSION="${LANGGRAPH_VERSION:-1.7.3}"
PORT="${LANGGRAPH_E2E_PORT:-3190}"
STEP_SECONDS="${LANGGRAPH_E2E_STEP_SECONDS:-2}"
JOB_TIMEOUT="${LANGGRAPH_E2E_JOB_TIMEOUT:-3s}"
APP_DIR="$LANGGRAPH_HOME/app"
INSTALLED_MARK="$APP_DIR/.reelforge-installed-$CLI_VERSION-$LG_VERSION"
CLI="$APP_DIR/node_modules/@langchain/langgraph-cli/dist/cli/cli.mjs"

T0=$(date +%s)
log() { printf '[e2e-langgraph %4ss] %s\n' "$(( $(date +%s) - T0 ))" "$*"; }
fail() { printf '[e2e-langgraph] FAIL: %s\n' "$*" >&2; exit 1; }

for tool in npm node curl ffprobe; do command -v "$tool" >/dev/null || fail "$tool not found"; done

# 1. The LangGraph.js CLI (its server is @langchain/langgraph-api) and library, from npm.
if [[ ! -f "$INSTALLED_MARK" ]]; then
  log "installing @langchain/langgraph-cli@$CLI_VERSION and @langchain/langgraph@$LG_VERSION into $APP_DIR"
  mkdir -p "$APP_DIR"
  cat >"$APP_DIR/package.json" <<EOF
{ "name": "reelforge-langgraph-e2e", "private": true, "type": "module",
  "dependencies": { "@langchain/langgraph-cli": "$CLI_VERSION", "@langchain/langgraph": "$LG_VERSION", "@langchain/core": "*" } }
EOF
  (cd "$APP_DIR" && npm install --no-audit --no-fund --loglevel=error)
  [[ -f "$CLI" ]] || fail "the LangGraph CLI is missing after install: $CLI"
  touch "$INSTALLED_MARK"
fi
log "node $(node -v), @langchain/langgraph-api $(cd "$APP_DIR" && node -p 'require("@langchain/langgraph-api/package.json").version')"

WORK="$(mktemp -d "${TMPDIR:-/tmp}/reelforge-langgraph-e2e.XXXXXX")"
LG_PID=""
HOST_PID=""
cleanup() {
  if [[ -n "$HOST_PID" ]]; then kill "$HOST_PID" 2>/dev/null || true; wait "$HOST_PID" 2>/dev/null || true; fi
  if [[ -n "$LG_PID" ]]; then kill "$LG_PID" 2>/dev/null || true; wait "$LG_PID" 2>/dev/null || true; fi
  [[ -n "${LANGGRAPH_E2E_KEEP:-}" ]] && echo "kept $WORK" || rm -rf "$WORK"
}
trap cleanup EXIT

# 2. The project's graphs, served by the stock server (in memory; the graphs' imports resolve to
# the cache's node_modules).
mkdir -p "$WORK/graphs"
cp "$ROOT/integrations/langgraph/langgraph.json" "$ROOT/integrations/langgraph/graphs.mjs" "$WORK/graphs/"
echo '{"type":"module","private":true}' >"$WORK/graphs/package.json"
ln -s "$APP_DIR/node_modules" "$WORK/graphs/node_modules"
LG_URL="http://127.0.0.1:$PORT"
(cd "$WORK/graphs" && exec env STEP_SECONDS="$STEP_SECONDS" LANGSMITH_TRACING=false \
  node "$CLI" dev --port "$PORT" --host 127.0.0.1 --no-browser --no-reload) >"$WORK/server.log" 2>&1 &
LG_PID=$!
for _ in $(seq 1 120); do curl -fsS -o /dev/null "$LG_URL/ok" 2>/dev/null && break; sleep 0.5; done
curl -fsS -o /dev/null "$LG_URL/ok" || { tail -n 40 "$WORK/server.log" >&2; fail "the LangGraph server did not start"; }
log "LangGraph server on $LG_URL (each node takes ${STEP_SECONDS}s)"

# 3. The host, on SQLite, with the graph job timeout of a manifests' copy lowered below the graph's length.
log "building the Reelforge host and plugins"
(cd "$ROOT" && make -s build >/dev/null) || fail "make build"
cp -r "$ROOT/manifests" "$WORK/manifests"
sed -i -E "s/^(  graph: \{.*timeout: )[0-9]+[a-z]+/\1$JOB_TIMEOUT/" "$WORK/manifests/engines/graph.yaml"
grep -q "timeout: $JOB_TIMEOUT" "$WORK/manifests/engines/graph.yaml" || fail "could not lower the graph job timeout"
HOST_PORT=$(( PORT + 1 ))
HOST_URL="http://127.0.0.1:$HOST_PORT"
mkdir -p "$WORK/rf"
RF=(env -u DATABASE_URL DATA_DIR="$WORK/rf" PORT="$HOST_PORT" CALLBACK_SECRET="e2e-langgraph-secret"
  CALLBACK_BASE_URL="$HOST_URL" RUNNER_URL="$LG_URL" RUNNER_PROTOCOL=langgraph
  PLUGIN_DIR="$ROOT/bin/plugins" MANIFEST_DIR="$WORK/manifests" LOG_FORMAT=json "$ROOT/bin/reelforge")
"${RF[@]}" user create --email ann@e2e.test --password password-ann --role user >/dev/null 2>&1 || fail "user create"
"${RF[@]}" serve >"$WORK/host.log" 2>&1 &
HOST_PID=$!
for _ in $(seq 1 60); do curl -fsS -o /dev/null "$HOST_URL/health" 2>/dev/null && break; sleep 0.5; done
curl -fsS -o /dev/null "$HOST_URL/health" || { tail -n 40 "$WORK/host.log" >&2; fail "the Reelforge host did not start"; }
json() { node -e 'const a=process.argv[1]; const j=JSON.parse(require("fs").existsSync(a)?require("fs").readFileSync(a,"utf8"):a); const v=eval(process.argv[2]); process.stdout.write(typeof v==="string"?v:JSON.stringify(v))' "$1" "$2"; }
TOKEN="$(json "$(curl -fsS "$HOST_URL/api/auth/login" -H 'Content-Type: application/json' \
  -d '{"email":"ann@e2e.test","password":"password-ann"}')" 'j.data.token')"
AUTH=(-H "Authorization: Bearer $TOKEN")
curl -fsS "$HOST_URL/health" >"$WORK/health.json"
graph_state="$(json "$WORK/health.json" '(j.engines||{}).graph||""')"
[[ "$graph_state" == ready ]] || { cat "$WORK/health.json" >&2; fail "/health calls the graph engine '$graph_state', not ready (GET /ok of the LangGraph server)"; }
log "Reelforge host on $HOST_URL (graph job timeout $JOB_TIMEOUT), graph engine: $graph_state"

# await RUN WANT...: poll the run's status until it is one of WANT (or failed), into $WORK/$RUN.json.
await() {
  local rid="$1"; shift
  local st=""
  for _ in $(seq 1 240); do
    curl -fsS "$HOST_URL/api/workflow/status/$rid" "${AUTH[@]}" >"$WORK/$rid.json" || true
    st="$(json "$WORK/$rid.json" 'j.status')"
    for w in "$@" failed completed; do [[ "$st" == "$w" ]] && { echo "$st"; return; }; done
    sleep 0.5
  done
  echo "$st"
}

# 4. live: longer than its job timeout, paused by the graph's interrupt(), resumed.
rid="$(json "$(curl -fsS "$HOST_URL/api/workflow/start" "${AUTH[@]}" -H 'Content-Type: application/json' \
  -d '{"workflow":"live","inputs":{"topic":"pour-over coffee","platform":"douyin","review":true}}')" 'j.run_id')"
st="$(await "$rid" paused)"
[[ "$st" == paused ]] || { cat "$WORK/$rid.json" >&2; tail -n 30 "$WORK/host.log" >&2; fail "live did not pause for review: $st"; }
step="$(json "$WORK/$rid.json" '(j.awaiting||{}).step_id')"
[[ "$step" == human_review ]] || { cat "$WORK/$rid.json" >&2; fail "live paused at '$step', not the graph's human_review"; }
log "live $rid: paused at $step after $(( $(date +%s) - T0 ))s"
curl -fsS -o /dev/null "$HOST_URL/api/workflow/resume/$rid" "${AUTH[@]}" -H 'Content-Type: application/json' \
  -d '{"input":{"feedback":"mention the bloom"}}' || fail "resume live"
st="$(await "$rid" completed)"
[[ "$st" == completed ]] || { cat "$WORK/$rid.json" >&2; tail -n 30 "$WORK/host.log" >&2; fail "live did not complete after resume: $st"; }
curl -fsS "$HOST_URL/api/workflow/result/$rid" "${AUTH[@]}" >"$WORK/live.result.json"
grep -q "mention the bloom" "$WORK/live.result.json" || { cat "$WORK/live.result.json" >&2; fail "the reviewer's feedback is not in live's script"; }
engine="$(json "$WORK/$rid.json" 'j.engine+" "+(j.degraded||"")')"
[[ "$engine" == "graph " ]] || fail "live ran on '$engine', not the graph engine"
# The run's thread (found by its metadata, as a LangGraph user would) holds two graph runs: the
# start and the resume; none was posted twice although the graph outlived its job timeout.
tid="$(json "$(curl -fsS "$LG_URL/threads/search" -H 'Content-Type: application/json' \
  -d '{"metadata":{"reelforge_run_id":"'"$rid"'"}}')" 'j.map(t=>t.thread_id).join(" ")')"
[[ "$tid" =~ ^[0-9a-f-]{36}$ ]] || fail "no single LangGraph thread for run $rid: '$tid'"
n="$(json "$(curl -fsS "$LG_URL/threads/$tid/runs")" 'String(j.length)')"
[[ "$n" == 2 ]] || fail "the live thread has $n LangGraph runs, want 2 (the start and the resume)"
log "live $rid: resumed and completed on the graph engine; the feedback is in the script"

# 5. short_drama: the graph writes, the host renders.
rid="$(json "$(curl -fsS "$HOST_URL/api/workflow/start" "${AUTH[@]}" -H 'Content-Type: application/json' \
  -d '{"workflow":"short_drama","inputs":{"topic":"a lost letter","characters":"Lin, Chen","duration":8}}')" 'j.run_id')"
st="$(await "$rid" completed)"
[[ "$st" == completed ]] || { cat "$WORK/$rid.json" >&2; tail -n 30 "$WORK/host.log" >&2; fail "short_drama did not complete: $st"; }
curl -fsS "$HOST_URL/api/workflow/result/$rid" "${AUTH[@]}" >"$WORK/drama.result.json"
video="$(json "$WORK/drama.result.json" '(function f(o){if(!o||typeof o!=="object")return "";if(typeof o.video_url==="string"&&o.video_url)return o.video_url;for(const k in o){const v=f(o[k]);if(v)return v}return ""})(j)')"
[[ -n "$video" ]] || { cat "$WORK/drama.result.json" >&2; fail "short_drama completed without a video_url"; }
[[ "$video" == http* ]] || video="$HOST_URL$video"
curl -fsS -o "$WORK/drama.mp4" "$video" "${AUTH[@]}" || fail "could not fetch the video $video"
dur="$(ffprobe -v error -select_streams v:0 -show_entries stream=codec_type:format=duration -of csv=p=0 "$WORK/drama.mp4" | tr '\n' ' ')"
[[ "$dur" == video* ]] || fail "ffprobe finds no video stream in short_drama's video: $dur"
grep -q "a lost letter" "$WORK/drama.result.json" || fail "short_drama's script does not come from the graph"
log "short_drama $rid: completed with a video ($dur)"

echo "PASS e2e-langgraph"
