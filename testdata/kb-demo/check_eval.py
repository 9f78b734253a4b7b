#!/usr/bin/env python3
"""Sanity checks for the kb-demo evaluation set.

Verifies that:
  * every item has a unique id and a known scenario, with exactly 10 items per scenario;
  * every expected_answer is 2..30 characters long and appears verbatim in its doc
    after Unicode NFKC normalisation, case folding and whitespace removal;
  * every expected_answer appears in exactly one doc (warns otherwise).

Usage: python3 check_eval.py [path/to/eval.json]
Exit status is 1 if any error was found (warnings alone do not fail).
"""
import json
import os
import re
import sys
import unicodedata
from collections import Counter

HERE = os.path.dirname(os.path.abspath(__file__))
DOCS = os.path.join(HERE, "docs")
EXPECTED_SCENARIOS = ["platform_rules", "script_craft", "operations", "brand_facts"]
PER_SCENARIO = 10


def norm(text):
    return re.sub(r"\s+", "", unicodedata.normalize("NFKC", text).casefold())


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "eval.json")
    with open(path, encoding="utf-8") as f:
        data = json.load(f)

    errors, warnings = [], []

    docs = {}
    for name in sorted(os.listdir(DOCS)):
        if name.endswith(".md"):
            with open(os.path.join(DOCS, name), encoding="utf-8") as f:
                docs[name] = norm(f.read())

    scenarios = data.get("scenarios", [])
    scenario_ids = [s.get("id") for s in scenarios]
    for s in scenarios:
        for key in ("id", "name", "description"):
            if not s.get(key):
                errors.append(f"scenario {s!r} missing {key}")
    if sorted(scenario_ids) != sorted(EXPECTED_SCENARIOS):
        errors.append(f"scenario ids {scenario_ids} != {EXPECTED_SCENARIOS}")

    items = data.get("items", [])
    ids = Counter(it.get("id") for it in items)
    for dup, n in ids.items():
        if n > 1:
            errors.append(f"duplicate id {dup} ({n} times)")
    expected_ids = {f"q{i:02d}" for i in range(1, len(items) + 1)}
    if set(ids) != expected_ids:
        errors.append(f"ids are not q01..q{len(items):02d}")

    per = Counter(it.get("scenario") for it in items)
    for sid in EXPECTED_SCENARIOS:
        if per.get(sid, 0) != PER_SCENARIO:
            errors.append(f"scenario {sid} has {per.get(sid, 0)} items, want {PER_SCENARIO}")
    for sid in per:
        if sid not in EXPECTED_SCENARIOS:
            errors.append(f"unknown scenario {sid}")

    used_docs = Counter()
    for it in items:
        iid = it.get("id")
        for key in ("question", "expected_answer", "doc", "scenario"):
            if not it.get(key):
                errors.append(f"{iid}: missing {key}")
        ans, doc = it.get("expected_answer", ""), it.get("doc", "")
        n = norm(ans)
        if not 2 <= len(n) <= 30:
            errors.append(f"{iid}: answer length {len(n)} outside 2..30: {ans!r}")
        if doc not in docs:
            errors.append(f"{iid}: doc {doc!r} not found in docs/")
            continue
        used_docs[doc] += 1
        if n not in docs[doc]:
            errors.append(f"{iid}: answer {ans!r} not found in {doc}")
        others = [d for d, t in docs.items() if d != doc and n in t]
        if others:
            warnings.append(f"{iid}: answer {ans!r} also appears in {', '.join(others)}")
        if norm(it.get("question", "")).find(n) >= 0:
            warnings.append(f"{iid}: question contains the answer verbatim")

    for name, text in docs.items():
        raw_len = len(open(os.path.join(DOCS, name), encoding="utf-8").read())
        if not 1500 <= raw_len <= 5000:
            warnings.append(f"doc {name} has {raw_len} characters (want 1500..5000)")

    print(f"docs: {len(docs)}, items: {len(items)}, per scenario: "
          + ", ".join(f"{s}={per.get(s, 0)}" for s in EXPECTED_SCENARIOS))
    print(f"docs referenced by items: {len(used_docs)}/{len(docs)}")
    for w in warnings:
        print("WARNING:", w)
    for e in errors:
        print("ERROR:", e)
    if errors:
        print(f"FAILED: {len(errors)} error(s), {len(warnings)} warning(s)")
        return 1
    print(f"OK: {len(warnings)} warning(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
