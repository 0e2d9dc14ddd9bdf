#!/usr/bin/env python3
"""Checks a calibration bundle written by validation/probe/hetplan_probe.py strictly against
the schema hetplan/calibration-bundle/v1 (docs/formats/calibration-bundle.md).

    python3 check_bundle.py BUNDLE.json [--ranks 2] [--min-gemm 6] [--backend cpu]

Exits 0 when the bundle is valid, 1 with one line per problem otherwise, 2 on usage errors.
Only the standard library is used.
"""

import argparse
import datetime
import json
import math
import sys

SCHEMA = "hetplan/calibration-bundle/v1"
BACKENDS = {"cpu": "gloo", "cuda": "nccl", "npu": "hccl", "mlu": "cncl"}
DTYPES = ("fp32", "fp16", "bf16")
MEMORY_KERNELS = ("copy", "scale", "add", "triad")
ELEMENTWISE_OPS = ("add", "mul", "gelu", "silu", "softmax", "layernorm", "rmsnorm")
OPERATOR_CLASSES = ("gemm", "flash_attention", "attention_unfused", "norm", "activation", "rope",
                    "embedding", "cross_entropy", "optimizer", "dropout")
COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "all_to_all")
TOP_KEYS = ("schema", "probe", "host", "dtypes", "gemm", "memory", "attention", "elementwise",
            "layer", "step", "operators", "collectives", "skipped")


class Checker:
    def __init__(self):
        self.errors = []

    def fail(self, path, message):
        self.errors.append(f"{path}: {message}")

    # --- typed fields

    def obj(self, value, path, keys):
        """An object with exactly `keys`; returns it, or None when it is not an object."""
        if not isinstance(value, dict):
            self.fail(path, f"expected an object, got {type(value).__name__}")
            return None
        for key in keys:
            if key not in value:
                self.fail(path, f"missing key '{key}'")
        for key in value:
            if key not in keys:
                self.fail(path, f"unknown key '{key}'")
        return value

    def lst(self, value, path):
        if not isinstance(value, list):
            self.fail(path, f"expected a list, got {type(value).__name__}")
            return []
        return value

    def string(self, d, key, path, choices=None, nonempty=True):
        if key not in d:
            return None
        value = d[key]
        if not isinstance(value, str):
            self.fail(f"{path}.{key}", f"expected a string, got {value!r}")
            return None
        if nonempty and not value:
            self.fail(f"{path}.{key}", "expected a non-empty string")
        if choices is not None and value not in choices:
            self.fail(f"{path}.{key}", f"expected one of {', '.join(choices)}, got {value!r}")
        return value

    def boolean(self, d, key, path):
        if key not in d:
            return None
        value = d[key]
        if not isinstance(value, bool):
            self.fail(f"{path}.{key}", f"expected true or false, got {value!r}")
            return None
        return value

    def integer(self, d, key, path, minimum=1):
        if key not in d:
            return None
        value = d[key]
        if not isinstance(value, int) or isinstance(value, bool):
            self.fail(f"{path}.{key}", f"expected an integer, got {value!r}")
            return None
        if value < minimum:
            self.fail(f"{path}.{key}", f"expected at least {minimum}, got {value}")
        return value

    def seconds(self, d, key, path):
        if key not in d:
            return None
        value = d[key]
        if not isinstance(value, (int, float)) or isinstance(value, bool) or \
                not math.isfinite(value) or value < 1e-9:
            self.fail(f"{path}.{key}", f"expected a finite time in seconds of at least 1e-9, "
                      f"got {value!r}")
            return None
        if value > 1e5:
            self.fail(f"{path}.{key}", f"implausible time {value} s")
        return value

    def model(self, value, path, step):
        """A layer's or a step's model; a layer's may be a mixture (experts, experts_per_token,
        expert_ffn in place of ffn). Returns whether it is a mixture."""
        keys = ["hidden", "heads", "kv_heads", "ffn", "activation", "norm"]
        moe = not step and isinstance(value, dict) and "experts" in value
        if moe:
            keys = ["hidden", "heads", "kv_heads", "activation", "norm", "experts",
                    "experts_per_token", "expert_ffn"]
        if step:
            keys = ["layers", "hidden", "heads", "kv_heads", "ffn", "vocab", "activation", "norm",
                    "tied_embeddings"]
        m = self.obj(value, path, keys)
        if m is None:
            return False
        for key in keys:
            if key in ("activation", "norm", "tied_embeddings"):
                continue
            self.integer(m, key, path, 2 if key == "experts" else 1)
        if moe:
            e, k = m.get("experts"), m.get("experts_per_token")
            if all(isinstance(x, int) and not isinstance(x, bool) for x in (e, k)) and k > e:
                self.fail(f"{path}.experts_per_token", f"expected at most experts ({e}), got {k}")
            if m.get("activation") != "swiglu":
                self.fail(f"{path}.activation", "expected swiglu for a mixture's experts")
        if step:
            self.string(m, "activation", path, ("swiglu",))
            self.string(m, "norm", path, ("rmsnorm",))
            if m.get("tied_embeddings", False) is not False:
                self.fail(f"{path}.tied_embeddings", "expected false")
        else:
            self.string(m, "activation", path, ("swiglu", "gelu"))
            self.string(m, "norm", path, ("rmsnorm", "layernorm"))
        h, a, kv = m.get("hidden"), m.get("heads"), m.get("kv_heads")
        if all(isinstance(x, int) and not isinstance(x, bool) and x > 0 for x in (h, a, kv)):
            if h % a:
                self.fail(path, f"hidden {h} is not a multiple of heads {a}")
            if a % kv:
                self.fail(path, f"heads {a} is not a multiple of kv_heads {kv}")
        return moe


def skipped_covers(skipped, what):
    """True when a skipped entry names `what` (exactly, or as a prefix 'what:...')."""
    return any(isinstance(s, dict) and isinstance(s.get("what"), str) and
               (s["what"] == what or s["what"].startswith(what + ":")) for s in skipped)


def check(bundle, args):
    c = Checker()
    root = c.obj(bundle, "bundle", TOP_KEYS)
    if root is None:
        return c.errors
    if root.get("schema") != SCHEMA:
        c.fail("schema", f"expected {SCHEMA!r}, got {root.get('schema')!r}")

    skipped = c.lst(root.get("skipped", []), "skipped")
    for i, s in enumerate(skipped):
        p = f"skipped[{i}]"
        s = c.obj(s, p, ("what", "why"))
        if s is not None:
            c.string(s, "what", p)
            c.string(s, "why", p)

    probe = c.obj(root.get("probe"), "probe", ("version", "started", "seconds", "quick", "seed"))
    if probe is not None:
        c.string(probe, "version", "probe")
        started = c.string(probe, "started", "probe")
        if started:
            try:
                when = datetime.datetime.fromisoformat(started.replace("Z", "+00:00"))
                if when.utcoffset() != datetime.timedelta(0):
                    c.fail("probe.started", f"expected a UTC time, got {started!r}")
            except ValueError:
                c.fail("probe.started", f"expected an ISO 8601 UTC time, got {started!r}")
        c.seconds(probe, "seconds", "probe")
        c.boolean(probe, "quick", "probe")
        c.integer(probe, "seed", "probe", minimum=0)

    host = c.obj(root.get("host"), "host", ("hostname", "backend", "device", "devices", "threads",
                                            "torch", "runtime", "collective_backend"))
    backend = None
    if host is not None:
        c.string(host, "hostname", "host")
        backend = c.string(host, "backend", "host", tuple(BACKENDS))
        c.string(host, "device", "host")
        c.integer(host, "devices", "host")
        c.integer(host, "threads", "host")
        c.string(host, "torch", "host")
        runtime = c.obj(host.get("runtime"), "host.runtime", ("name", "version"))
        if runtime is not None:
            c.string(runtime, "name", "host.runtime")
            c.string(runtime, "version", "host.runtime")
        coll = c.string(host, "collective_backend", "host", tuple(BACKENDS.values()))
        if backend in BACKENDS and coll is not None and coll != BACKENDS[backend]:
            c.fail("host.collective_backend", f"expected {BACKENDS[backend]} for backend "
                   f"{backend}, got {coll}")
        if args.backend and backend != args.backend:
            c.fail("host.backend", f"expected {args.backend}, got {backend!r}")

    dtypes = c.obj(root.get("dtypes"), "dtypes", DTYPES)
    supported = set()
    if dtypes is not None:
        for d in DTYPES:
            if c.boolean(dtypes, d, "dtypes"):
                supported.add(d)
        if dtypes.get("fp32") is not True:
            c.fail("dtypes.fp32", "expected fp32 to run on every device")

    def dtype_of(entry, path):
        d = c.string(entry, "dtype", path, DTYPES)
        if d is not None and d in DTYPES and d not in supported:
            c.fail(f"{path}.dtype", f"{d} is measured but dtypes.{d} is false")
        return d

    gemm = c.lst(root.get("gemm"), "gemm")
    for i, e in enumerate(gemm):
        p = f"gemm[{i}]"
        e = c.obj(e, p, ("dtype", "layout", "m", "n", "k", "seconds"))
        if e is not None:
            dtype_of(e, p)
            if e.get("layout") not in ("nn", "nt", "tn"):
                c.fail(f"{p}.layout", f"expected nn, nt or tn, got {e.get('layout')!r}")
            for key in ("m", "n", "k"):
                c.integer(e, key, p)
            c.seconds(e, "seconds", p)
    if len(gemm) < args.min_gemm:
        c.fail("gemm", f"expected at least {args.min_gemm} points, got {len(gemm)}")

    memory = c.lst(root.get("memory"), "memory")
    for i, e in enumerate(memory):
        p = f"memory[{i}]"
        e = c.obj(e, p, ("kernel", "bytes", "seconds"))
        if e is not None:
            c.string(e, "kernel", p, MEMORY_KERNELS)
            c.integer(e, "bytes", p)
            c.seconds(e, "seconds", p)
    for kernel in MEMORY_KERNELS:
        if not any(isinstance(e, dict) and e.get("kernel") == kernel for e in memory) and \
                not skipped_covers(skipped, "memory"):
            c.fail("memory", f"no '{kernel}' point and no skipped entry for it")

    attention = c.lst(root.get("attention"), "attention")
    for i, e in enumerate(attention):
        p = f"attention[{i}]"
        e = c.obj(e, p, ("dtype", "batch", "heads", "seq", "head_dim", "causal", "kernel",
                         "forward_seconds", "backward_seconds"))
        if e is not None:
            dtype_of(e, p)
            for key in ("batch", "heads", "seq", "head_dim"):
                c.integer(e, key, p)
            c.boolean(e, "causal", p)
            c.string(e, "kernel", p, ("sdpa", "math"))
            c.seconds(e, "forward_seconds", p)
            c.seconds(e, "backward_seconds", p)
    if not attention and not skipped_covers(skipped, "attention"):
        c.fail("attention", "no points and no skipped entry for attention")

    elementwise = c.lst(root.get("elementwise"), "elementwise")
    for i, e in enumerate(elementwise):
        p = f"elementwise[{i}]"
        e = c.obj(e, p, ("op", "dtype", "elements", "seconds"))
        if e is not None:
            c.string(e, "op", p, ELEMENTWISE_OPS)
            dtype_of(e, p)
            c.integer(e, "elements", p)
            c.seconds(e, "seconds", p)
    for op in ELEMENTWISE_OPS:
        if not any(isinstance(e, dict) and e.get("op") == op for e in elementwise) and \
                not skipped_covers(skipped, f"elementwise:{op}") and \
                not any(isinstance(s, dict) and s.get("what") == "elementwise" for s in skipped):
            c.fail("elementwise", f"no '{op}' point and no skipped entry for it")

    layer = c.lst(root.get("layer"), "layer")
    for i, e in enumerate(layer):
        p = f"layer[{i}]"
        keys = ["model", "dtype", "micro_batch", "seq", "forward_seconds", "backward_seconds"]
        if isinstance(e, dict) and "grouped_gemm" in e:
            keys.append("grouped_gemm")
        e = c.obj(e, p, keys)
        if e is not None:
            moe = c.model(e.get("model"), f"{p}.model", step=False)
            if "grouped_gemm" in e:
                c.boolean(e, "grouped_gemm", p)
                if not moe:
                    c.fail(f"{p}.grouped_gemm", "expected only with a mixture's experts")
            dtype_of(e, p)
            c.integer(e, "micro_batch", p)
            c.integer(e, "seq", p)
            c.seconds(e, "forward_seconds", p)
            c.seconds(e, "backward_seconds", p)
    if not layer:
        c.fail("layer", "expected at least one decoder-layer point")

    step = c.lst(root.get("step"), "step")
    for i, e in enumerate(step):
        p = f"step[{i}]"
        e = c.obj(e, p, ("model", "dtype", "micro_batch", "seq", "optimizer", "seconds"))
        if e is not None:
            c.model(e.get("model"), f"{p}.model", step=True)
            dtype_of(e, p)
            c.integer(e, "micro_batch", p)
            c.integer(e, "seq", p)
            c.string(e, "optimizer", p, ("adamw",))
            c.seconds(e, "seconds", p)
    if not step:
        c.fail("step", "expected the training-step entry")

    operators = c.lst(root.get("operators"), "operators")
    seen = []
    for i, e in enumerate(operators):
        p = f"operators[{i}]"
        e = c.obj(e, p, ("class", "status", "detail"))
        if e is not None:
            cls = c.string(e, "class", p, OPERATOR_CLASSES)
            c.string(e, "status", p, ("native", "fallback", "missing"))
            c.string(e, "detail", p)
            if cls in seen:
                c.fail(p, f"class {cls} listed twice")
            seen.append(cls)
    for cls in OPERATOR_CLASSES:
        if cls not in seen:
            c.fail("operators", f"class {cls} is missing")

    collectives = c.lst(root.get("collectives"), "collectives")
    for i, e in enumerate(collectives):
        p = f"collectives[{i}]"
        e = c.obj(e, p, ("collective", "ranks", "bytes", "seconds"))
        if e is not None:
            c.string(e, "collective", p, COLLECTIVES)
            c.integer(e, "ranks", p, minimum=2)
            c.integer(e, "bytes", p)
            c.seconds(e, "seconds", p)
    if args.ranks >= 2:
        measured = {e.get("collective") for e in collectives
                    if isinstance(e, dict) and e.get("ranks") == args.ranks}
        for name in COLLECTIVES:
            if name in measured:
                continue
            if skipped_covers(skipped, f"collectives:{name}"):
                continue
            c.fail("collectives", f"no {name} with ranks {args.ranks}, and no skipped entry "
                   f"'collectives:{name}' saying why")
        if not measured:
            c.fail("collectives", f"no collective was measured with ranks {args.ranks}")
    return c.errors


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bundle")
    parser.add_argument("--ranks", type=int, default=2,
                        help="ranks every supported collective must have (0: do not require any)")
    parser.add_argument("--min-gemm", type=int, default=6,
                        help="least number of GEMM points (the probe always measures its 6 "
                             "smallest shapes)")
    parser.add_argument("--backend", help="the backend the bundle must name")
    args = parser.parse_args()
    try:
        with open(args.bundle) as f:
            bundle = json.load(f)
    except OSError as exc:
        print(f"check_bundle: cannot read {args.bundle}: {exc.strerror}", file=sys.stderr)
        return 1
    except ValueError as exc:
        print(f"check_bundle: {args.bundle} is not JSON: {exc}", file=sys.stderr)
        return 1
    errors = check(bundle, args)
    if errors:
        print(f"check_bundle: {args.bundle} does not match {SCHEMA} ({len(errors)} problems):",
              file=sys.stderr)
        for error in errors[:100]:
            print(f"  {error}", file=sys.stderr)
        return 1
    counts = ", ".join(f"{key} {len(bundle[key])}" for key in TOP_KEYS[4:])
    print(f"check_bundle: {args.bundle} is a valid {SCHEMA} bundle ({counts})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
