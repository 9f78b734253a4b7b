#!/usr/bin/env bash
# Opt-in end-to-end check of the graph engine against a stock LangGraph server (RUNNER_PROTOCOL=langgraph).
#
# Installs the LangGraph.js CLI and library from npm into a cache dir (never system-wide), serves
# the project's own graphs (integrations/langgraph: live_script, short_drama) with `langgraphjs dev`,
# builds and starts the Reelforge host on SQLite with RUNNER_URL pointing at that server, then
# through the host's API:
#   - live, with review: true: every graph node takes LANGGRAPH_E2E_STEP_SECONDS, so the graph runs
#     longer than the graph job timeout of a copy of the manifests (graph.yaml's timeout lowered to
#     LANGGRAPH_E2E_JOB_TIMEOUT); the graph reads the owner's note with the run's tool credential
#     (config.configurable); the run pauses at the graph's interrupt() (human_review), is resumed
#     with feedback, completes once (one LangGraph run a posting: two on the thread), and the note
#     and the feedback are in its script;
#   - cancel: a live run cancelled while its graph works cancels the LangGraph run;
#   - a graph that throws (a failing graph served beside the project's): the run fails with the
#     graph's own message; one that fails once: the run, retried, goes on from the failed node;
#   - takeover: the host is killed (SIGKILL) while a live graph works and started again; the run
#     completes on the one LangGraph run it had (joined or adopted, never started twice);
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
# Two graphs of the checks, served beside the project's: one that throws, and one whose single node
# outlasts a host's restart (the takeover joins it while it runs).
cat >"$WORK/graphs/checks.mjs" <<'EOF'
import { Annotation, StateGraph, START, END } from "@langchain/langgraph";
const State = Annotation.Root({ topic: Annotation({ reducer: (_, b) => b, default: () => "" }),
  script: Annotation({ reducer: (_, b) => b, default: () => "" }) });
export const failing = new StateGraph(State)
  .addNode("fire_kiln", async () => { throw new Error("the kiln is cold"); })
  .addEdge(START, "fire_kiln").addEdge("fire_kiln", END).compile();
let brewed = 0; // flaky's second node fails the first time only: a retry goes on from it
export const flaky = new StateGraph(State)
  .addNode("research", async () => ({ script: "Notes." }))
  .addNode("write_rundown", async (s) => {
    if (++brewed === 1) throw new Error("the grinder jammed");
    return { script: `${s.script} A rundown about ${s.topic}, written once.` };
  })
  .addEdge(START, "research").addEdge("research", "write_rundown").addEdge("write_rundown", END).compile();
export const slow = new StateGraph(State)
  .addNode("research", async () => ({}))
  .addNode("write_rundown", async (s) => {
    await new Promise((r) => setTimeout(r, Number(process.env.SLOW_SECONDS || "30") * 1000));
    return { script: `A slow rundown about ${s.topic}.` };
  })
  .addEdge(START, "research").addEdge("research", "write_rundown").addEdge("write_rundown", END).compile();
EOF
node -e 'const f=process.argv[1]; const j=JSON.parse(require("fs").readFileSync(f)); Object.assign(j.graphs, {failing: "./checks.mjs:failing", flaky: "./checks.mjs:flaky", slow: "./checks.mjs:slow"}); require("fs").writeFileSync(f, JSON.stringify(j))' "$WORK/graphs/langgraph.json"
ln -s "$APP_DIR/node_modules" "$WORK/graphs/node_modules"
LG_URL="http://127.0.0.1:$PORT"
(cd "$WORK/graphs" && exec env STEP_SECONDS="$STEP_SECONDS" SLOW_SECONDS=30 LANGSMITH_TRACING=false \
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
# live_failing and live_slow: live on those graphs, without a fallback (a graph's failure is not an outage).
for g in failing flaky slow; do
  sed -E -e "s/^id: live\$/id: live_$g/" -e "s/^(  assistant_id: ).*/\1$g/" -e '/^fallback:/d' \
    "$WORK/manifests/live.yaml" >"$WORK/manifests/live_$g.yaml"
done
HOST_PORT=$(( PORT + 1 ))
HOST_URL="http://127.0.0.1:$HOST_PORT"
mkdir -p "$WORK/rf"
# LEASE_MS: a host started again takes up the runs of the killed one within seconds.
RF=(env -u DATABASE_URL DATA_DIR="$WORK/rf" PORT="$HOST_PORT" CALLBACK_SECRET="e2e-langgraph-secret"
  CALLBACK_BASE_URL="$HOST_URL" RUNNER_URL="$LG_URL" RUNNER_PROTOCOL=langgraph LEASE_MS=3000
  PLUGIN_DIR="$ROOT/bin/plugins" MANIFEST_DIR="$WORK/manifests" LOG_FORMAT=json "$ROOT/bin/reelforge")
"${RF[@]}" user create --email ann@e2e.test --password password-ann --role user >/dev/null 2>&1 || fail "user create"
start_host() {
  "${RF[@]}" serve >>"$WORK/host.log" 2>&1 &
  HOST_PID=$!
  for _ in $(seq 1 60); do curl -fsS -o /dev/null "$HOST_URL/health" 2>/dev/null && break; sleep 0.5; done
  curl -fsS -o /dev/null "$HOST_URL/health" || { tail -n 40 "$WORK/host.log" >&2; fail "the Reelforge host did not start"; }
}
start_host
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

# thread_of RUN: the LangGraph thread of a Reelforge run, found by its metadata as a LangGraph user would.
thread_of() {
  local t
  t="$(json "$(curl -fsS "$LG_URL/threads/search" -H 'Content-Type: application/json' \
    -d '{"metadata":{"reelforge_run_id":"'"$1"'"}}')" 'j.map(t=>t.thread_id).join(" ")')"
  [[ "$t" =~ ^[0-9a-f-]{36}$ ]] || fail "no single LangGraph thread for run $1: '$t'"
  echo "$t"
}
# lg_runs THREAD: the statuses of the LangGraph runs on the thread, oldest first.
lg_runs() { json "$(curl -fsS "$LG_URL/threads/$1/runs?limit=100")" 'j.sort((a,b)=>a.created_at<b.created_at?-1:1).map(r=>r.status).join(" ")'; }
# start_run BODY: starts a run, prints its id.
start_run() { json "$(curl -fsS "$HOST_URL/api/workflow/start" "${AUTH[@]}" -H 'Content-Type: application/json' -d "$1")" 'j.run_id'; }
# graph_working RUN: waits until the run's graph has reported its first node (it is working).
graph_working() {
  for _ in $(seq 1 120); do
    curl -fsS "$HOST_URL/api/workflow/trace/$1" "${AUTH[@]}" 2>/dev/null | grep -q '"research"' && return
    sleep 0.25
  done
  fail "run $1: the graph reported no node"
}

# The owner's note the live graph reads with the run's tool credential.
NOTE="Pour-over coffee needs a thirty second bloom with twice the coffee's weight in water."
curl -fsS -o /dev/null "$HOST_URL/api/knowledge/text" "${AUTH[@]}" -H 'Content-Type: application/json' \
  -d "{\"title\":\"Brewing notes\",\"text\":\"$NOTE\"}" || fail "ingest the note"

# 4. live: longer than its job timeout, reads the owner's note, paused by the graph's interrupt(), resumed.
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
grep -q "thirty second bloom" "$WORK/live.result.json" || { cat "$WORK/live.result.json" >&2; fail "the owner's note (read by the graph with the run's tool credential) is not in live's script"; }
grep -q "rft_" "$WORK/live.result.json" && fail "the run's tool credential is in live's result"
engine="$(json "$WORK/$rid.json" 'j.engine+" "+(j.degraded||"")')"
[[ "$engine" == "graph " ]] || fail "live ran on '$engine', not the graph engine"
# The run's thread (found by its metadata, as a LangGraph user would) holds two graph runs: the
# start and the resume; none was posted twice although the graph outlived its job timeout.
tid="$(thread_of "$rid")"
runs="$(lg_runs "$tid")"
[[ "$runs" == "success success" ]] || fail "the live thread's LangGraph runs are '$runs', want 'success success' (the start and the resume)"
# The credential reached the graph in config.configurable under a key LangGraph keeps out of
# checkpoint metadata: the thread's history does not hold it.
curl -fsS "$LG_URL/threads/$tid/history" -H 'Content-Type: application/json' -d '{"limit":50}' | grep -q "rft_" &&
  fail "the run's tool credential is in the LangGraph thread's checkpoint history"
log "live $rid: read the owner's note, resumed and completed on the graph engine; the feedback is in the script"

# 5. cancel: the Reelforge run cancelled while its graph works cancels the LangGraph run.
rid="$(start_run '{"workflow":"live","inputs":{"topic":"cold brew"}}')"
graph_working "$rid"
curl -fsS -o /dev/null -X POST "$HOST_URL/api/workflow/cancel/$rid" "${AUTH[@]}" || fail "cancel live"
st="$(await "$rid" cancelled)"
[[ "$st" == cancelled ]] || { cat "$WORK/$rid.json" >&2; fail "the cancelled live run is $st"; }
tid="$(thread_of "$rid")"
for _ in $(seq 1 40); do runs="$(lg_runs "$tid")"; [[ "$runs" == pending || "$runs" == running ]] || break; sleep 0.25; done
[[ "$runs" == interrupted ]] || fail "the cancelled run's LangGraph runs are '$runs', want 'interrupted' (cancelled)"
log "cancel $rid: the LangGraph run was cancelled ($runs)"

# 6. A graph that throws: the run fails with the graph's own message, not degraded to node.
rid="$(start_run '{"workflow":"live_failing","inputs":{"topic":"stoneware"}}')"
st="$(await "$rid" failed)"
[[ "$st" == failed ]] || { cat "$WORK/$rid.json" >&2; fail "live_failing is $st, want failed"; }
grep -q "the kiln is cold" "$WORK/$rid.json" || { cat "$WORK/$rid.json" >&2; fail "the failed run does not say the graph's error"; }
grep -q "AGENT_EXECUTION_FAILED" "$WORK/$rid.json" || { cat "$WORK/$rid.json" >&2; fail "the failed run's code is not AGENT_EXECUTION_FAILED"; }
log "failing graph $rid: failed with $(json "$WORK/$rid.json" 'JSON.stringify(j.error)')"

# 6b. retry: a graph whose node fails once; the Reelforge run, retried, goes on from the thread's
# last checkpoint (the failed node again, the one before it kept): runs 'error success' on the thread.
rid="$(start_run '{"workflow":"live_flaky","inputs":{"topic":"latte art"}}')"
st="$(await "$rid" failed)"
[[ "$st" == failed ]] || { cat "$WORK/$rid.json" >&2; fail "live_flaky's first try is $st, want failed"; }
curl -fsS -o /dev/null -X POST "$HOST_URL/api/workflow/retry/$rid" "${AUTH[@]}" || fail "retry live_flaky"
st="$(await "$rid" completed)"
[[ "$st" == completed ]] || { cat "$WORK/$rid.json" >&2; fail "the retried live_flaky is $st"; }
runs="$(lg_runs "$(thread_of "$rid")")"
[[ "$runs" == "error success" ]] || fail "the retried run's LangGraph runs are '$runs', want 'error success'"
curl -fsS "$HOST_URL/api/workflow/result/$rid" "${AUTH[@]}" | grep -q "Notes. A rundown about latte art, written once." ||
  fail "the retried run's script is not the graph's, continued from its checkpoint"
log "retry $rid: continued from the failed node on the same thread ($runs)"

# 7. takeover: the host dies (SIGKILL) while the graph works (live_slow's node takes 30 s); started
# again, it takes the run up and joins the LangGraph run still in flight on its thread.
rid="$(start_run '{"workflow":"live_slow","inputs":{"topic":"espresso"}}')"
graph_working "$rid"
kill -9 "$HOST_PID"; wait "$HOST_PID" 2>/dev/null || true
log "takeover $rid: host killed while the graph works; starting it again"
start_host
st="$(await "$rid" completed)"
[[ "$st" == completed ]] || { cat "$WORK/$rid.json" >&2; tail -n 30 "$WORK/host.log" >&2; fail "the taken-over live run is $st"; }
runs="$(lg_runs "$(thread_of "$rid")")"
[[ "$runs" == success ]] || fail "the taken-over run's LangGraph runs are '$runs', want one 'success' (never started twice)"
how="$(json "$(curl -fsS "$HOST_URL/api/workflow/trace/$rid" "${AUTH[@]}")" '(function f(o){if(!o||typeof o!=="object")return "";if(o.step_id==="graph_runner"&&o.inputs&&o.inputs.start)return o.inputs.start;for(const k in o){const v=f(o[k]);if(v)return v}return ""})(j)')"
[[ "$how" == join ]] || fail "the new host's execution of $rid was '$how', want 'join' (the graph was still running)"
curl -fsS "$HOST_URL/api/workflow/result/$rid" "${AUTH[@]}" | grep -q "A slow rundown about espresso" ||
  fail "the taken-over run's result is not the graph's script"
log "takeover $rid: the new host joined the LangGraph run in flight and completed with its script"

# 8. short_drama: the graph writes, the host renders.
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
