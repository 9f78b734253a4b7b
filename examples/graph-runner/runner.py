#!/usr/bin/env python3
"""A small reference agent graph runner for Reelforge's graph engine (Python standard library only).

Protocol (shared/spec DECISIONS.md, Engine protocols):
  POST /run     {run_id, job_id, workflow_id, graph_id, inputs, callback_url, user_context,
                 project_context, resume_input?}  -> 202 {accepted, run_id, job_id}
                Later it POSTs the graph-callback to callback_url:
                {run_id, job_id, status, outputs, trace, metadata{total_tokens, total_cost_usd,
                 duration_ms}, error?} signed with X-Signature: sha256=<hex HMAC-SHA256 of the raw
                body with CALLBACK_SECRET>.
  POST /cancel  {run_id, job_ids?}  -> 200; a callback not yet sent for those jobs (without job_ids,
                for that run) is dropped. The host names the job when it timed one out.
  GET  /health  -> 200 {status: "ok"}

The graph has two agents, research then write. Inputs that ask for review (review, require_review or
pause_for_review true) pause after research with a pending human step `review` and outputs.prompt;
the resumed run (POST /run again with resume_input) writes the script, using resume_input.feedback
if given. inputs.fail true makes the write step fail (AGENT_EXECUTION_FAILED), for trying failures.

Environment: PORT (8000), CALLBACK_SECRET (required to be accepted by Reelforge), RUNNER_DELAY
(seconds before the callback, 0.5).
"""

import argparse
import hashlib
import hmac
import json
import logging
import os
import sys
import threading
import time
import urllib.error
import urllib.request
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MAX_BODY = 1 << 20
log = logging.getLogger("graph-runner")


def now_iso():
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def truthy(v):
    return v is True or (isinstance(v, str) and v.strip().lower() in ("1", "true", "yes", "on"))


def sign(secret, raw):
    return "sha256=" + hmac.new(secret.encode(), raw, hashlib.sha256).hexdigest()


class Runner:
    """Executes runs in background threads and posts their signed callbacks."""

    def __init__(self, secret, delay):
        self.secret = secret
        self.delay = delay
        self.cancelled = set()
        self.lock = threading.Lock()

    def accept(self, body):
        threading.Thread(target=self._execute, args=(body,), daemon=True).start()

    def cancel(self, run_id, job_ids=None):
        """Drop the callbacks of the named jobs, or of every job of the run when none is named (a
        timed-out job is cancelled alone: the run's next attempt, a new job, goes on)."""
        with self.lock:
            self.cancelled.update(job_ids or [run_id])

    def _is_cancelled(self, body):
        with self.lock:
            return body.get("run_id") in self.cancelled or body.get("job_id") in self.cancelled

    # ------------------------------------------------------------------ the graph

    def _execute(self, body):
        started = time.monotonic()
        inputs = body.get("inputs") if isinstance(body.get("inputs"), dict) else {}
        resume = body.get("resume_input") if isinstance(body.get("resume_input"), dict) else None
        topic = str(inputs.get("topic") or inputs.get("summary") or inputs.get("question") or "your topic")
        platform = str(inputs.get("platform") or "short video")
        time.sleep(self.delay)

        trace = []
        research = self._step("research", "Research the topic", "researcher", {"topic": topic, "platform": platform})
        notes = [f"Why {topic} matters to viewers right now",
                 f"One surprising fact about {topic}",
                 f"A practical tip viewers can use today"]
        self._finish(research, {"notes": notes}, tokens=len(" ".join(notes).split()) * 2)
        trace.append(research)

        wants_review = any(truthy(inputs.get(k)) for k in ("review", "require_review", "pause_for_review"))
        if wants_review and resume is None:
            review = self._step("review", "Human review of the outline", "human_input", {"notes": notes})
            review["status"] = "pending"
            trace.append(review)
            outputs = {"prompt": f"Review the outline for '{topic}': approve it or send feedback to resume.",
                       "notes": notes}
            self._callback(body, "paused", outputs, trace, started)
            return
        if resume is not None:
            review = self._step("review", "Human review of the outline", "human_input", {"notes": notes})
            self._finish(review, {"input": resume})
            trace.append(review)

        write = self._step("write", "Write the script", "writer", {"notes": notes, "platform": platform})
        if truthy(inputs.get("fail")):
            write.update(status="failed", completed_at=now_iso(),
                         error={"code": "AGENT_EXECUTION_FAILED", "message": "the writer was asked to fail"})
            trace.append(write)
            self._callback(body, "failed", {}, trace, started,
                           error={"code": "AGENT_EXECUTION_FAILED", "message": "the writer was asked to fail", "step_id": "write"})
            return
        feedback = str((resume or {}).get("feedback") or "").strip()
        lines = [f"[Hook] Stop scrolling: {notes[0].lower()}.",
                 f"[Beat 1] {notes[1]}.",
                 f"[Beat 2] {notes[2]}.",
                 f"[Call to action] Follow for more about {topic} on {platform}."]
        if feedback:
            lines.insert(3, f"[Beat 3] As you asked: {feedback}")
        script = "\n".join(lines)
        self._finish(write, {"script": script}, tokens=len(script.split()) * 2)
        trace.append(write)
        self._callback(body, "completed", {"script": script, "title": topic, "engine": "graph-runner"}, trace, started)

    @staticmethod
    def _step(step_id, name, agent, inputs):
        return {"step_id": step_id, "step_name": name, "agent": agent, "status": "running",
                "inputs": inputs, "started_at": now_iso(), "_t0": time.monotonic()}

    @staticmethod
    def _finish(step, outputs, tokens=0):
        t0 = step.pop("_t0")
        step.update(status="completed", outputs=outputs, completed_at=now_iso(),
                    duration_ms=round((time.monotonic() - t0) * 1000, 3), confidence=0.8,
                    tokens_used=tokens, cost_usd=0.0)

    # ------------------------------------------------------------------ the callback

    def _callback(self, body, status, outputs, trace, started, error=None):
        run_id = body.get("run_id")
        if self._is_cancelled(body):
            log.info("run %s (job %s) was cancelled: no callback", run_id, body.get("job_id"))
            return
        for s in trace:
            s.pop("_t0", None)
        payload = {"run_id": run_id, "job_id": body.get("job_id"), "status": status, "outputs": outputs,
                   "trace": trace, "metadata": {
                       "total_tokens": sum(int(s.get("tokens_used") or 0) for s in trace),
                       "total_cost_usd": 0.0,
                       "duration_ms": round((time.monotonic() - started) * 1000, 3)}}
        if error:
            payload["error"] = error
        raw = json.dumps(payload).encode()
        url = body.get("callback_url")
        for attempt in range(4):
            if attempt:
                time.sleep(2 ** (attempt - 1))
            req = urllib.request.Request(url, data=raw, method="POST", headers={
                "Content-Type": "application/json", "X-Signature": sign(self.secret, raw)})
            try:
                with urllib.request.urlopen(req, timeout=15) as res:
                    log.info("callback for run %s (%s): %s", run_id, status, res.status)
                    return
            except urllib.error.HTTPError as e:
                log.warning("callback for run %s answered %s", run_id, e.code)
                if 400 <= e.code < 500:
                    # refused (bad signature, unknown job, 410: the job timed out and the host
                    # gave up on it): sending again will not help
                    return
            except (urllib.error.URLError, OSError) as e:
                log.warning("callback for run %s failed: %s", run_id, e)
        log.error("callback for run %s given up", run_id)


class Handler(BaseHTTPRequestHandler):
    server_version = "ReelforgeGraphRunner/1"

    def log_message(self, fmt, *args):
        log.debug("%s " + fmt, self.address_string(), *args)

    def _answer(self, status, obj):
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _body(self):
        n = int(self.headers.get("Content-Length") or 0)
        if n > MAX_BODY:
            return None
        try:
            body = json.loads(self.rfile.read(n) or b"null")
        except ValueError:
            return None
        return body if isinstance(body, dict) else None

    def do_GET(self):
        if self.path.split("?")[0] == "/health":
            return self._answer(200, {"status": "ok"})
        self._answer(404, {"error": "not found"})

    def do_POST(self):
        path = self.path.split("?")[0].rstrip("/")
        body = self._body()
        if body is None:
            return self._answer(400, {"error": "the body must be a JSON object"})
        runner = self.server.runner
        if path == "/run":
            missing = [k for k in ("run_id", "job_id", "callback_url") if not body.get(k)]
            if missing:
                return self._answer(400, {"error": f"missing {', '.join(missing)}"})
            runner.accept(body)
            return self._answer(202, {"accepted": True, "run_id": body["run_id"], "job_id": body["job_id"]})
        if path == "/cancel":
            if not body.get("run_id"):
                return self._answer(400, {"error": "missing run_id"})
            job_ids = body.get("job_ids") if isinstance(body.get("job_ids"), list) else None
            runner.cancel(body["run_id"], job_ids)
            return self._answer(200, {"cancelled": True, "run_id": body["run_id"]})
        self._answer(404, {"error": "not found"})


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--host", default=os.environ.get("HOST", "127.0.0.1"))
    p.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")))
    p.add_argument("--delay", type=float, default=float(os.environ.get("RUNNER_DELAY", "0.5")))
    args = p.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s", stream=sys.stderr)
    secret = os.environ.get("CALLBACK_SECRET", "")
    if not secret:
        log.warning("CALLBACK_SECRET is not set: Reelforge will refuse the callbacks (401)")
    server = ThreadingHTTPServer((args.host, args.port), Handler)
    server.daemon_threads = True
    server.runner = Runner(secret, args.delay)
    log.info("graph runner listening on http://%s:%d", args.host, server.server_address[1])
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
