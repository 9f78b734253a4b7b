#!/usr/bin/env python3
"""Writes words.txt, the dictionary of package zhwords, from jieba's dict.txt (MIT licence).

Kept: every single Han character and the 80,000 commonest words of two to four Han characters,
each with its count; the first line is the total count of the whole dictionary, so a word's
probability is the same as in jieba. Run by `go generate ./internal/zhwords` on a machine with
Debian's python3-jieba.
"""
import re
import sys

SRC = sys.argv[1] if len(sys.argv) > 1 else "/usr/lib/python3/dist-packages/jieba/dict.txt"
han = re.compile(r"[\u4e00-\u9fff]+")
singles, words, total = [], [], 0
for line in open(SRC, encoding="utf-8"):
    w, f = line.split()[:2]
    f = int(f)
    total += f
    if not han.fullmatch(w):
        continue
    if len(w) == 1:
        singles.append((w, f))
    elif len(w) <= 4:
        words.append((f, w))
words.sort(key=lambda x: (-x[0], x[1]))
kept = sorted(singles + [(w, f) for f, w in words[:80000]])
with open("words.txt", "w", encoding="utf-8") as out:
    out.write(f"{total}\n")
    for w, f in kept:
        out.write(f"{w} {f}\n")
