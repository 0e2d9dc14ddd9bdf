#!/usr/bin/env python3
"""Hostile inputs for every format hetplan reads, run through the commands that read them.

Each case is a bundled file (a chip profile, the cluster, workload, scenario and plan of the
default scenario, Hugging Face configs, kubectl nodes, nccl-tests and hccl_test logs, training
logs, profiler traces, a calibration bundle, a published-run file, a validation record beside
its evidence, a sweep file) with one hostile change: a number set to zero, a negative, a denormal, 1e308, NaN or infinity, a quantity
with a wrong unit, a wrong type, a key removed or duplicated, the text truncated, a byte-order
mark, CRLF line ends, control bytes, deep nesting. The changes are drawn from a fixed seed, so
the corpus is the same on every run.

Every run must end one of two ways:
  accepted  exit 0, and no NaN or infinity anywhere in what it printed (JSON is parsed);
  rejected  exit 2 with exactly one line on stderr, "error: FILE:LINE:COLUMN: ...".
Anything else is a finding: a crash or signal, a hang (each run is killed after --limit
seconds), another exit code, a non-finite figure, an error without its location, or an error
over several lines. The script prints the counts and the findings, and exits 1 if there is any.

Usage: hostile.py --hetplan BUILD/cli/hetplan --source SOURCE_DIR [--work DIR] [--jobs N]
                  [--limit SECONDS] [--list]
       hostile.py --self-test   (the judge on commands whose outcome is known)
"""

import argparse
import concurrent.futures
import json
import math
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

SEED = 20261201

# Values that poison a model if a loader lets them through, or that a loader must reject well.
HOSTILE_NUMBERS = ["0", "-1", "-0.0", "1e-320", "1e308", "-1e308", "1e999", ".nan", ".inf", "-.inf",
                   "nan", "inf", "99999999999999999999999999", "4294967296", "2147483648", "0x1F",
                   "1_000", "1/0", "3.5", "-7e3"]
HOSTILE_SCALARS = ["''", "~", "[]", "{}", "[1, 2]", "{a: 1}", "\"\\0\"", "yes", "\"\U0001F600\"",
                   "&a x", "*undefined", "!!binary AAAA", "\"" + "x" * 5000 + "\"",
                   # a figure and its unit far apart: a matcher that recurses per character
                   # overflows the stack on it
                   "\"8x" + " " * 300000 + "40 Gb/s\""]
HOSTILE_UNITS = ["TFLOPS", "GB/s", "Gbps", "ns", "us", "GiB", "W", "h", "furlongs", ""]
JSON_NUMBERS = [0, -1, 1e-320, 1e308, -1e308, 2 ** 63, 2 ** 64 + 1, 10 ** 30, 0.5, -0.0]
NONFINITE = re.compile(r"(?<![A-Za-z_])[-+]?(nan|inf|infinity)(?![A-Za-z_])", re.IGNORECASE)
LOCATED = re.compile(r"^error: .+?:\d+:\d+: \S")


# ---------------------------------------------------------------------------------------------
# Text mutations


def scalar_lines(text):
    """Indices of lines 'key: value' (or '- value') with a plain scalar value."""
    out = []
    for i, line in enumerate(text.split("\n")):
        stripped = line.split(" #", 1)[0].rstrip()
        m = re.match(r"^(\s*(?:- )?[A-Za-z0-9_.\-]+:\s+)(\S.*)$", stripped)
        if m and not m.group(2).startswith(("|", ">")):
            out.append(i)
    return out


def replace_value(line, value):
    m = re.match(r"^(\s*(?:- )?[A-Za-z0-9_.\-]+:\s+)", line)
    return m.group(1) + value if m else line


def quantity_number(line, rng):
    """A 'key: 1.5 unit' line with the number, or the unit, made hostile."""
    m = re.match(r"^(\s*(?:- )?[A-Za-z0-9_.\-]+:\s+)([-+0-9.eE]+)\s+([A-Za-z/%]+)(.*)$", line)
    if not m:
        return None
    if rng.random() < 0.7:
        return m.group(1) + rng.choice(HOSTILE_NUMBERS) + " " + m.group(3) + m.group(4)
    return m.group(1) + m.group(2) + " " + rng.choice(HOSTILE_UNITS) + m.group(4)


def inline_number(line, rng):
    """A number inside a flow mapping ({tp: 8, dp: 4}) made hostile."""
    numbers = list(re.finditer(r"(?<=[:\[,] )-?[0-9][0-9.eE+-]*(?=[,}\] ]|$)", line))
    if not numbers:
        return None
    m = rng.choice(numbers)
    return line[:m.start()] + rng.choice(HOSTILE_NUMBERS) + line[m.end():]


def whole_text(kind, text, rng):
    """The changes every format shares: the text cut short, a byte-order mark, CRLF line ends."""
    if kind == "truncate":
        cut = rng.randrange(0, max(1, len(text)))
        return text[:cut], f"truncated at byte {cut}"
    if kind == "bom":
        return "\ufeff" + text, "byte-order mark"
    return text.replace("\n", "\r\n"), "CRLF line ends"


def mutate_yaml(text, rng):
    """One hostile change to a YAML document; returns (text, description)."""
    lines = text.split("\n")
    candidates = scalar_lines(text)
    kind = rng.choice(["number", "number", "number", "quantity", "quantity", "scalar", "drop",
                       "duplicate", "inline", "inline", "truncate", "bom", "crlf", "control",
                       "nest", "tab", "huge-key"])
    if kind in ("number", "scalar", "drop", "duplicate", "huge-key") and candidates:
        i = rng.choice(candidates)
        if kind == "number":
            lines[i] = replace_value(lines[i], rng.choice(HOSTILE_NUMBERS))
        elif kind == "scalar":
            lines[i] = replace_value(lines[i], rng.choice(HOSTILE_SCALARS))
        elif kind == "drop":
            del lines[i]
        elif kind == "duplicate":
            lines.insert(i + 1, lines[i])
        else:
            indent = re.match(r"^(\s*)", lines[i]).group(1)
            lines.insert(i + 1, indent + "k" * 3000 + ": 1")
        return "\n".join(lines), f"{kind} at line {i + 1}"
    if kind == "quantity":
        options = [i for i in range(len(lines)) if quantity_number(lines[i], rng) is not None]
        if options:
            i = rng.choice(options)
            lines[i] = quantity_number(lines[i], rng)
            return "\n".join(lines), f"quantity at line {i + 1}"
    if kind == "inline":
        options = [i for i in range(len(lines)) if inline_number(lines[i], rng) is not None]
        if options:
            i = rng.choice(options)
            lines[i] = inline_number(lines[i], rng)
            return "\n".join(lines), f"inline number at line {i + 1}"
    if kind in ("truncate", "bom", "crlf"):
        return whole_text(kind, text, rng)
    if kind == "control":
        cut = rng.randrange(0, max(1, len(text)))
        return text[:cut] + rng.choice(["\x00", "\x07", "\x1b[2J", "\x7f"]) + text[cut:], \
            f"control byte at {cut}"
    if kind == "nest":
        depth = rng.choice([70, 300, 5000])
        return text + "\nextra: " + "[" * depth + "]" * depth + "\n", f"nesting {depth}"
    if kind == "tab" and candidates:
        i = rng.choice(candidates)
        lines[i] = "\t" + lines[i]
        return "\n".join(lines), f"tab at line {i + 1}"
    return text + "\n: :\n", "stray colon"


def json_leaves(value, path=()):
    if isinstance(value, dict):
        for k, v in value.items():
            yield from json_leaves(v, path + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value[:50]):
            yield from json_leaves(v, path + (i,))
    else:
        yield path


def json_set(value, path, new):
    for p in path[:-1]:
        value = value[p]
    if new is DELETE:
        if isinstance(value, dict):
            del value[path[-1]]
        else:
            value.pop(path[-1])
    else:
        value[path[-1]] = new


DELETE = object()


def mutate_json(text, rng):
    """One hostile change to a JSON document, structural or textual."""
    kind = rng.choice(["leaf", "leaf", "leaf", "leaf", "type", "delete", "truncate", "bom",
                       "crlf", "nest", "bignum", "garbage"])
    try:
        doc = json.loads(text)
    except ValueError:
        doc = None
    if doc is not None and kind in ("leaf", "type", "delete", "bignum"):
        leaves = [p for p in json_leaves(doc) if p]
        if leaves:
            path = rng.choice(leaves)
            if kind == "leaf":
                json_set(doc, path, rng.choice(JSON_NUMBERS))
            elif kind == "type":
                json_set(doc, path, rng.choice(["", "x", [], {}, None, True, "1e999"]))
            elif kind == "delete":
                json_set(doc, path, DELETE)
            dumped = json.dumps(doc)
            if kind == "bignum":
                json_set(doc, path, 123456789)
                dumped = json.dumps(doc).replace("123456789", rng.choice(["1e999", "-1e999", "1" * 400]), 1)
            return dumped, f"{kind} at {'/'.join(map(str, path))}"
    if kind in ("truncate", "bom", "crlf"):
        return whole_text(kind, text, rng)
    if kind == "nest":
        depth = rng.choice([100, 10000])
        return "[" * depth + text + "]" * depth, f"nesting {depth}"
    cut = rng.randrange(0, max(1, len(text)))
    return text[:cut] + rng.choice(["}", "]]", "\"", "\x00", ",,", "NaN", "Infinity"]) + text[cut:], \
        f"garbage at byte {cut}"


def mutate_log(text, rng):
    """One hostile change to a tool's text output (a log, a benchmark table)."""
    lines = text.split("\n")
    kind = rng.choice(["number", "number", "number", "number", "drop", "duplicate", "truncate",
                       "bom", "crlf", "control", "longline", "swap"])
    numeric = [i for i, line in enumerate(lines) if re.search(r"\d", line)]
    if kind == "number" and numeric:
        i = rng.choice(numeric)
        matches = list(re.finditer(r"-?\d+(\.\d+)?([eE][-+]?\d+)?", lines[i]))
        m = rng.choice(matches)
        value = rng.choice(["0", "-1", "nan", "inf", "1e308", "1e-320", "99999999999999999999",
                            "-0", "1e999", "N/A", ""])
        lines[i] = lines[i][:m.start()] + value + lines[i][m.end():]
        return "\n".join(lines), f"number at line {i + 1}"
    if kind == "drop" and lines:
        i = rng.randrange(len(lines))
        del lines[i]
        return "\n".join(lines), f"line {i + 1} dropped"
    if kind == "duplicate" and lines:
        i = rng.randrange(len(lines))
        lines.insert(i, lines[i])
        return "\n".join(lines), f"line {i + 1} duplicated"
    if kind == "swap" and len(lines) > 2:
        i = rng.randrange(len(lines) - 1)
        lines[i], lines[i + 1] = lines[i + 1], lines[i]
        return "\n".join(lines), f"lines {i + 1} and {i + 2} swapped"
    if kind in ("truncate", "bom", "crlf"):
        return whole_text(kind, text, rng)
    if kind == "longline":
        i = rng.randrange(max(1, len(lines)))
        lines.insert(i, "9" * 200000)
        return "\n".join(lines), f"long line at {i + 1}"
    cut = rng.randrange(0, max(1, len(text)))
    return text[:cut] + "\x00\xff\x1b" + text[cut:], f"control bytes at {cut}"


# ---------------------------------------------------------------------------------------------
# Families: which file is mutated and which commands read it


class Family:
    def __init__(self, name, sources, mutate, count, commands, setup=None):
        self.name = name            # label in the summary
        self.sources = sources      # files (relative to the source tree) to mutate
        self.mutate = mutate        # text mutation function
        self.count = count          # cases to draw
        self.commands = commands    # function(case_dir, mutated_path) -> list of argv lists
        self.setup = setup          # function(case_dir, source_path) -> where the mutant goes


def scenario_tree(src, case):
    """A scratch copy of the default scenario and every file it reads."""
    for folder in ("scenarios", "topologies", "workloads", "plans", "profiles"):
        shutil.copytree(os.path.join(src, folder), os.path.join(case, folder))
    return os.path.join(case, "scenarios", "default.yaml")


def families(src, hetplan):
    def in_tree(relative):
        def setup(case, _source):
            scenario_tree(src, case)
            return os.path.join(case, relative)
        return setup

    def flat(name):
        def setup(case, _source):
            return os.path.join(case, name)
        return setup

    scenario = lambda case: os.path.join(case, "scenarios", "default.yaml")
    # Costlier commands (plan search, the twin) run on every n-th case only, chosen by the case's
    # number so that the corpus is the same on every run.
    every = lambda case, n: int(case.rsplit("-", 1)[1]) % n == 0
    H = [hetplan]
    profiles = [os.path.join("profiles", f) for f in sorted(os.listdir(os.path.join(src, "profiles")))
                if f.endswith(".yaml")]
    hf = []
    for root, _dirs, files in os.walk(os.path.join(src, "tests", "formats", "data", "hf")):
        hf += [os.path.relpath(os.path.join(root, f), src) for f in files if f.endswith(".json")]
    hf.sort()
    data = "tests/importers/data/"
    out = []

    # Chip profiles of the default scenario: check the file, estimate and search with it.
    for chip in ("ascend-910b", "hygon-k100-ai", "cambricon-mlu370-x8"):
        rel = f"profiles/{chip}.yaml"
        out.append(Family(f"chip {chip}", [rel], mutate_yaml, 60,
                          lambda case, p: [H + ["check", p], H + ["eval", scenario(case), "--json"]]
                          + ([H + ["plan", scenario(case), "--json"]] if every(case, 6) else []),
                          in_tree(rel)))
    # Every other bundled profile, on its own.
    out.append(Family("chip (others)", [p for p in profiles if not any(
        c in p for c in ("ascend-910b.", "hygon-k100-ai", "cambricon-mlu370"))], mutate_yaml, 110,
        lambda case, p: [H + ["check", p]], None))
    out.append(Family("cluster", ["topologies/mixed-roce-64.yaml"], mutate_yaml, 120,
                      lambda case, p: [H + ["check", p], H + ["eval", scenario(case), "--json"]]
                      + ([H + ["plan", scenario(case), "--json"]] if every(case, 4) else []),
                      in_tree("topologies/mixed-roce-64.yaml")))
    out.append(Family("workload", ["workloads/llama-70b-pretrain.yaml"], mutate_yaml, 90,
                      lambda case, p: [H + ["check", p], H + ["eval", scenario(case), "--json"]],
                      in_tree("workloads/llama-70b-pretrain.yaml")))
    out.append(Family("scenario", ["scenarios/default.yaml"], mutate_yaml, 80,
                      lambda case, p: [H + ["check", p], H + ["eval", p, "--json"]]
                      + ([H + ["simulate", p, "--json"]] if every(case, 8) else []),
                      in_tree("scenarios/default.yaml")))
    out.append(Family("plan", ["plans/default-reference.yaml"], mutate_yaml, 90,
                      lambda case, p: [H + ["check", p], H + ["eval", scenario(case), "--plan", p, "--json"],
                                       H + ["export", p, "--scenario", scenario(case), "--to", "json", "--allow-unvalidated", "--out", os.path.join(case, "export")]],
                      in_tree("plans/default-reference.yaml")))
    out.append(Family("plan with replica groups", ["plans/default-replica-groups.yaml"], mutate_yaml, 60,
                      lambda case, p: [H + ["check", p], H + ["eval", scenario(case), "--plan", p, "--json"],
                                       H + ["simulate", scenario(case), "--plan", p, "--json"]],
                      in_tree("plans/default-replica-groups.yaml")))
    out.append(Family("hf config", ["workloads/hf/llama-2-70b/config.json"] + hf, mutate_json, 90,
                      lambda case, p: [H + ["check", p]], None))
    out.append(Family("hf config in a workload", ["workloads/hf/llama-2-70b/config.json"], mutate_json, 30,
                      lambda case, p: [H + ["eval", scenario(case), "--json"]],
                      in_tree("workloads/hf/llama-2-70b/config.json")))
    out.append(Family("kubectl nodes", [data + "kubectl-get-nodes-ascend-dcu-mlu.json"], mutate_json, 80,
                      lambda case, p: [H + ["inventory", "import", p, "--profiles",
                                            os.path.join(src, "profiles"),
                                            "--out", os.path.join(case, "imported.yaml")]],
                      flat("nodes.json")))
    collective_logs = [data + "nccl-tests-5colls-h100-4rank-1node-nccltests2.17.8.log",
                       data + "nccl-tests-alltoall-sendrecv-h100-2rank-2node-nccltests2.17.8.log",
                       data + "hccl-test-allreduce-8npu-doc-example-oam-tools.txt"]
    out.append(Family("collective log", collective_logs, mutate_log, 90,
                      lambda case, p: [H + ["import", p, "--json"],
                                       H + ["calibrate", os.path.join(src, "profiles", "nvidia-h100-sxm5-80gb.yaml"),
                                            "--from", p, "--out", os.path.join(case, "calibrated.yaml")]],
                      flat("collective.log")))
    out.append(Family("nccl-tests json", [data + "synthetic-from-text-nccl-tests-alltoall-h100-2rank-2node-v3.json"],
                      mutate_json, 30, lambda case, p: [H + ["import", p, "--json"]], flat("nccl.json")))
    training_logs = [data + "megatron-lm-gpt2-v100-32rank-tp4-pp8-2021-bigscience.out",
                     data + "mindspeed-llm-fsdp2-qwen3-8b-finetune-A2-3iters.log",
                     data + "megatron-deepspeed-bloom176b-a100-samplespersec-tflops-3iters.log"]
    out.append(Family("training log", training_logs, mutate_log, 70,
                      lambda case, p: [H + ["import", p, "--json"]], flat("train.log")))
    out.append(Family("profiler trace", [data + "torch-profiler-trace-mi250-rocm6.2-minitoy-train.json"],
                      mutate_json, 40, lambda case, p: [H + ["import", p, "--json"]], flat("trace.json")))
    out.append(Family("calibration bundle", ["tests/validation/data/h200-probe-bundle.json"], mutate_json, 50,
                      lambda case, p: [H + ["calibrate", os.path.join(src, "profiles", "nvidia-h100-sxm5-80gb.yaml"),
                                            "--from", p, "--out", os.path.join(case, "calibrated.yaml")]],
                      flat("bundle.json")))
    out.append(Family("published runs", ["validation/published-runs/modellink-llama2-ascend.yaml",
                                         "validation/published-runs/flagperf-llama3-8b-a100.yaml"],
                      mutate_yaml, 50,
                      lambda case, p: [H + ["validate", "--published", os.path.dirname(p), "--json"]],
                      flat("runs/case.yaml")))
    # A validation record beside its evidence: the ladder and the plan search read it, and check
    # each entry's evidence (an entry whose evidence does not hold is shown, not an error).
    def record_beside_evidence(case, _source):
        shutil.copytree(os.path.join(src, "tests", "e2e", "data", "evidence"), os.path.join(case, "evidence"))
        os.makedirs(os.path.join(case, "records"))
        return os.path.join(case, "records", "record.yaml")
    default_scenario = os.path.join(src, "scenarios", "default.yaml")
    out.append(Family("validation record", ["tests/e2e/data/records/ascend-910b-cann-8.0.0.yaml"], mutate_yaml, 40,
                      lambda case, p: [H + ["validate", "--ladder", default_scenario, "--records", os.path.dirname(p), "--json"]]
                      + ([H + ["plan", default_scenario, "--records", os.path.dirname(p), "--json"]] if every(case, 8) else []),
                      record_beside_evidence))
    # A sweep file beside the default scenario, run whole (one job) into a fresh --out; one change
    # in five is a second YAML document after the first (appended last, so that the other
    # families' corpus stays as it was).
    def mutate_sweep(text, rng):
        if rng.random() < 0.2:
            return text + "---\nschema: hetplan/sweep/v1\nname: second\n", "a second document"
        return mutate_yaml(text, rng)
    def beside_scenarios(case, source):
        scenario_tree(src, case)
        return os.path.join(case, source)
    out.append(Family("sweep file", ["scenarios/sweeps/ascend-scaling.yaml",
                                     "scenarios/sweeps/dcu-mlu-mtbf.yaml"], mutate_sweep, 24,
                      lambda case, p: [H + ["sweep", p, "--jobs", "1", "--out", os.path.join(case, "out")]],
                      beside_scenarios))
    return out


# ---------------------------------------------------------------------------------------------
# Running and judging


def finite_json(value):
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(finite_json(v) for v in value.values())
    if isinstance(value, list):
        return all(finite_json(v) for v in value)
    return True


def identifiers(text):
    """Words the input uses as names (a scenario called "inf" is legal; its name is no figure),
    and the words of a chip's vendor and model, which `check` repeats ("DCU K-inf-AI")."""
    names = {m.lower() for m in re.findall(
        r"^\s*(?:- )?(?:name|id|island|chip|model_type|zone)\s*:\s*([A-Za-z0-9._-]+)\s*$", text, re.M)}
    for line in re.findall(r"^(?:vendor|model)\s*:\s*(.+)$", text, re.M):
        names.update(word.lower() for word in re.findall(r"[A-Za-z]+", line))
    return names


def judge(argv, limit, cwd, names=frozenset()):
    start = time.monotonic()
    try:
        proc = subprocess.run(argv, cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True,
                              timeout=limit, start_new_session=True)
    except subprocess.TimeoutExpired:
        return "hang", f"no exit after {limit} s"
    elapsed = time.monotonic() - start
    out = proc.stdout.decode("utf-8", "replace")
    err = proc.stderr.decode("utf-8", "replace")
    if proc.returncode < 0:
        return "crash", f"signal {signal.Signals(-proc.returncode).name}: {err[-300:]}"
    if proc.returncode == 0:
        if "--json" in argv:
            try:
                doc = json.loads(out)
            except ValueError as error:
                return "bad output", f"--json printed no JSON ({error})"
            if not finite_json(doc):
                return "non-finite", "a NaN or infinity in the JSON"
        else:
            for m in NONFINITE.finditer(out):
                if m.group(0).lower().lstrip("+-") not in names:
                    return "non-finite", m.group(0) + " in the output"
        return "accepted", f"{elapsed:.2f} s"
    if proc.returncode == 2:
        lines = [line for line in err.split("\n") if line.strip()]
        if len(lines) != 1:
            return "multi-line error", " | ".join(lines[:3])[:300]
        if not LOCATED.match(lines[0]):
            return "unlocated error", lines[0][:300]
        return "rejected", lines[0][:160]
    return "wrong exit", f"exit {proc.returncode}: {err.strip()[-300:]}"


def build_cases(src, hetplan, work):
    rng = random.Random(SEED)
    cases = []
    for family in families(src, hetplan):
        for n in range(family.count):
            source = family.sources[n % len(family.sources)]
            with open(os.path.join(src, source), encoding="utf-8", errors="surrogateescape") as f:
                text = f.read()
            mutated, what = family.mutate(text, rng)
            cases.append((family, source, mutated, what, len(cases)))
    return cases


def run_case(src, work, limit, case):
    family, source, mutated, what, index = case
    case_dir = os.path.join(work, f"case-{index:04d}")
    os.makedirs(case_dir)
    target = family.setup(case_dir, source) if family.setup else \
        os.path.join(case_dir, os.path.basename(source))
    os.makedirs(os.path.dirname(target), exist_ok=True)
    with open(target, "w", encoding="utf-8", errors="surrogateescape", newline="") as f:
        f.write(mutated)
    results = []
    for argv in family.commands(case_dir, target):
        verdict, detail = judge(argv, limit, case_dir, identifiers(mutated))
        results.append((argv[1], verdict, detail))
    shutil.rmtree(case_dir, ignore_errors=True)
    return family.name, source, what, results


def self_test():
    """The judge on commands whose outcome is known: each class of finding must be caught."""
    sh = lambda script: ["sh", "-c", script]
    expected = [
        (sh("echo 'step 1.5 s'"), "accepted"),
        (sh("echo '{\"step_time_s\": 2.0}'") + ["--json"], "accepted"),
        (sh("echo 'error: a.yaml:3:7: peak: expected a number' >&2; exit 2"), "rejected"),
        (sh("echo 'step -nan s'"), "non-finite"),
        (sh("echo 'tokens/s inf'"), "non-finite"),
        (sh("echo '{\"step_time_s\": NaN}'") + ["--json"], "non-finite"),
        (sh("echo '{\"step_time_s\": Infinity}'") + ["--json"], "non-finite"),
        (sh("echo 'not json'") + ["--json"], "bad output"),
        (sh("echo 'error: a.yaml: cannot read' >&2; exit 2"), "unlocated error"),
        (sh("printf 'error: a.yaml:1:1: x\\nmore\\n' >&2; exit 2"), "multi-line error"),
        (sh("exit 1"), "wrong exit"),
        (sh("kill -SEGV $$"), "crash"),
        (sh("sleep 5"), "hang"),
    ]
    failed = 0
    for argv, want in expected:
        got, detail = judge(argv, 1, None)
        if got != want:
            failed += 1
            print(f"self-test: {argv[2]!r}: expected {want}, got {got} ({detail})")
    got, _ = judge(sh("echo 'scenario inf: ok'"), 1, None, {"inf"})
    if got != "accepted":
        failed += 1
        print("self-test: a name from the input counted as a non-finite figure")
    print(f"self-test: {len(expected) + 1 - failed} of {len(expected) + 1} verdicts right")
    return 1 if failed else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hetplan")
    parser.add_argument("--source")
    parser.add_argument("--self-test", action="store_true",
                        help="check the judge on commands whose outcome is known, and stop")
    parser.add_argument("--work")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--limit", type=float, default=60)
    parser.add_argument("--list", action="store_true", help="print every case and its verdicts")
    args = parser.parse_args()
    if args.self_test:
        return self_test()
    if not args.hetplan or not args.source:
        parser.error("--hetplan and --source are needed")
    src = os.path.abspath(args.source)
    hetplan = os.path.abspath(args.hetplan)
    work = args.work or tempfile.mkdtemp(prefix="hetplan-hostile-")
    os.makedirs(work, exist_ok=True)
    cases = build_cases(src, hetplan, work)
    counts = {}
    per_family = {}
    findings = []
    started = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        for family, source, what, results in pool.map(lambda c: run_case(src, work, args.limit, c), cases):
            for command, verdict, detail in results:
                counts[verdict] = counts.get(verdict, 0) + 1
                per_family.setdefault(family, {}).setdefault(verdict, 0)
                per_family[family][verdict] += 1
                if verdict not in ("accepted", "rejected"):
                    findings.append(f"{family}: {source} ({what}): {command}: {verdict}: {detail}")
                if args.list:
                    print(f"{family:28s} {what:28s} {command:10s} {verdict:10s} {detail}")
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)
    runs = sum(counts.values())
    print(f"hostile inputs: {len(cases)} cases, {runs} command runs in {time.monotonic() - started:.0f} s")
    for family, verdicts in per_family.items():
        print(f"  {family:28s} " + ", ".join(f"{v} {n}" for v, n in sorted(verdicts.items())))
    print("outcomes: " + ", ".join(f"{v} {n}" for v, n in sorted(counts.items())))
    bad = runs - counts.get("accepted", 0) - counts.get("rejected", 0)
    print(f"findings: {bad} (crashes {counts.get('crash', 0)}, hangs {counts.get('hang', 0)}, "
          f"non-finite {counts.get('non-finite', 0)}, unlocated {counts.get('unlocated error', 0)}, "
          f"multi-line {counts.get('multi-line error', 0)}, other exit {counts.get('wrong exit', 0)}, "
          f"bad output {counts.get('bad output', 0)})")
    for finding in findings:
        print("  " + finding)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
