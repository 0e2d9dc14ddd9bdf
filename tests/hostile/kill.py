#!/usr/bin/env python3
"""Interrupting hetplan at random moments leaves nothing half-written and no worker behind.

Runs `hetplan plan --out DIR` (which writes plan files) and `hetplan simulate --trace FILE`
(which starts twin workers and writes a trace) many times, each ended after a random delay by
SIGKILL, SIGTERM or SIGINT, and checks after each:
  - every file under a destination name is whole: each plan file passes `hetplan check`, the
    trace, if there, is complete JSON;
  - after SIGTERM or SIGINT (exit paths the process controls) no scratch file is left: no
    `.NAME.tmpPID` beside the plans, no `.plans.tmpPID` folder, no `TRACE.partial-PID`;
  - the plans folder is absent or holds ranks 01 to K of one run, no gap, no earlier run's;
  - no hetplan-twin worker outlives the run.
SIGKILL cannot be handled, so its scratch files may stay (never under a destination name).
The delays come from a fixed seed. Exits 1 on any finding.

Usage: kill.py --hetplan BUILD/cli/hetplan --source SOURCE_DIR [--runs N]
"""

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

SEED = 7


def twin_workers(twin, parent):
    """Pids of running hetplan-twin workers that `parent` started (each names its parent in
    HETPLAN_TWIN_PARENT; workers of other processes running beside this test do not count)."""
    pids = []
    mark = f"HETPLAN_TWIN_PARENT={parent}".encode()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                argv0 = f.read().split(b"\0")[0].decode("utf-8", "replace")
            if argv0 != twin:
                continue
            with open(f"/proc/{entry}/environ", "rb") as f:
                if mark in f.read().split(b"\0"):
                    pids.append(int(entry))
        except OSError:
            continue
    return pids


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hetplan", required=True)
    parser.add_argument("--source", required=True)
    parser.add_argument("--runs", type=int, default=36)
    args = parser.parse_args()
    hetplan = os.path.abspath(args.hetplan)
    twin = os.path.join(os.path.dirname(hetplan), "hetplan-twin")
    source = os.path.abspath(args.source)
    scenario = os.path.join(source, "scenarios", "default.yaml")
    rng = random.Random(SEED)
    findings = []
    counts = {}
    with tempfile.TemporaryDirectory(prefix="hetplan-kill-") as work:
        out = os.path.join(work, "plans")
        trace = os.path.join(work, "step.json")
        for run in range(args.runs):
            sig = [signal.SIGKILL, signal.SIGTERM, signal.SIGINT][run % 3]
            simulate = run % 2 == 1
            argv = ([hetplan, "simulate", scenario, "--trace", trace] if simulate
                    else [hetplan, "plan", scenario, "--top", "4", "--out", out])
            delay = rng.uniform(0.0, 1.5)
            proc = subprocess.Popen(argv, cwd=work, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
            time.sleep(delay)
            proc.send_signal(sig)
            try:
                code = proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                findings.append(f"run {run}: {argv[1]} did not end within 60 s of {sig.name}")
                continue
            ended = "finished" if code >= 0 else "interrupted"
            key = f"{argv[1]} {sig.name} {ended}"
            counts[key] = counts.get(key, 0) + 1
            # Workers die with their parent: the death signal fires at once, and a worker that
            # starts after its parent died stops at its parent check, which a sanitizer build
            # reaches only after its runtime's start-up; allow up to 30 s.
            for _ in range(1500):
                if not twin_workers(twin, proc.pid):
                    break
                time.sleep(0.02)
            left = twin_workers(twin, proc.pid)
            if left:
                findings.append(f"run {run}: {argv[1]} after {sig.name}: twin workers left: {left}")
                for pid in left:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except OSError:
                        pass
            handled = sig != signal.SIGKILL

            def scratch_left(path, what):
                """A scratch file is a finding after a signal the process handles; clear it."""
                if handled:
                    findings.append(f"run {run}: {argv[1]} after {sig.name}: {what} left: "
                                    + os.path.basename(path))
                os.remove(path)

            # The plans appear as one set: the folder is absent (no run finished yet) or holds
            # ranks 01 to K of one run (a stopped search ranks fewer), never another run's ranks
            # beyond them; the set is written into `.plans.tmpPID` beside it first.
            if os.path.isdir(out):
                ranks = {name[:2] for name in os.listdir(out) if name[:2].isdigit()}
                if not ranks or ranks != {f"{k:02d}" for k in range(1, len(ranks) + 1)}:
                    findings.append(f"run {run}: plan after {sig.name}: the folder holds ranks "
                                    f"{sorted(ranks)}, not one whole set")
            for name in sorted(os.listdir(work)):
                if name.startswith(".plans.tmp"):
                    if handled:
                        findings.append(f"run {run}: plan after {sig.name}: scratch folder left: {name}")
                    shutil.rmtree(os.path.join(work, name))
            if os.path.isdir(out):
                for name in sorted(os.listdir(out)):
                    path = os.path.join(out, name)
                    if name.startswith("."):
                        scratch_left(path, "scratch file")
                        continue
                    check = subprocess.run([hetplan, "check", path], capture_output=True)
                    if check.returncode != 0:
                        findings.append(f"run {run}: plan after {sig.name}: {name} is not a whole plan: "
                                        + check.stderr.decode("utf-8", "replace").strip()[:200])
            for name in sorted(os.listdir(work)):
                path = os.path.join(work, name)
                if name.startswith("step.json.partial-"):
                    scratch_left(path, "scratch trace")
                elif name == "step.json":
                    try:
                        with open(path, encoding="utf-8") as f:
                            json.load(f)
                    except ValueError as error:
                        findings.append(f"run {run}: simulate after {sig.name}: the trace is not whole ({error})")
    print(f"interrupted runs: {args.runs}: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    print(f"findings: {len(findings)}")
    for finding in findings:
        print("  " + finding)
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
