#!/usr/bin/env python3
"""Write the reference harness's run-level trajectory.json for a finished
`sandcell batch --benchmark` run, the file its judge.py scripts (physics,
long_context) read: {problem_id: {problem_statement, trajectory, reward,
agent_answer, ground_truth}}.

usage: lis_trajectory.py RUN_DIR [--repeat R] [-o FILE]

The problems come from the data file the run recorded in RUN_DIR/batch.json,
the results from RUN_DIR/results.jsonl (the last line of an attempt wins),
the steps from each attempt's trajectory.json. Standard library only.
"""
import argparse
import json
import os
import sys


def load_problems(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    if text.lstrip().startswith("["):
        items = json.loads(text)
    else:
        items = [json.loads(line) for line in text.splitlines() if line.strip()]
    out = {}
    for p in items:
        if isinstance(p, dict) and "id" in p:
            out.setdefault(str(p["id"]), p)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run_dir")
    ap.add_argument("--repeat", type=int, default=0, help="which repeat (default 0)")
    ap.add_argument("-o", dest="out", help="output file (default stdout)")
    args = ap.parse_args()
    with open(os.path.join(args.run_dir, "batch.json"), encoding="utf-8") as f:
        manifest = json.load(f)
    data = manifest.get("tasks_file")
    if not data or "benchmark" not in manifest:
        sys.exit("lis_trajectory.py: %s is not a `sandcell batch --benchmark` run" % args.run_dir)
    problems = load_problems(data)
    results = {}
    with open(os.path.join(args.run_dir, "results.jsonl"), encoding="utf-8") as f:
        for line in f:
            if not line.endswith("\n") or not line.strip():
                continue  # a line still being written
            r = json.loads(line)
            if r.get("repeat") == args.repeat:
                results[r["id"]] = r
    out = {}
    for pid, r in results.items():
        steps = []
        try:
            with open(os.path.join(args.run_dir, r["dir"], "trajectory.json"), encoding="utf-8") as f:
                steps = json.load(f).get("steps", [])
        except (OSError, ValueError, KeyError):
            pass
        p = problems.get(pid, {})
        answer = r.get("answer") or ""
        out[pid] = {
            "problem_statement": p.get("problem_statement", ""),
            "trajectory": steps,
            "reward": r.get("score") or 0.0,
            "agent_answer": answer.strip() if r.get("mode") == "sandbox" else answer,
            "ground_truth": p.get("ground_truth", r.get("expected")),
        }
    text = json.dumps(out, indent=2, ensure_ascii=False) + "\n"
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(text)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
