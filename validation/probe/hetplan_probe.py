#!/usr/bin/env python3
"""hetplan calibration probe: measures one node and writes a calibration bundle.

Copy this one file to a node and run it with the node's PyTorch:

    python3 hetplan_probe.py --out BUNDLE.json [--backend auto|cpu|cuda|npu|mlu]
        [--dtypes fp32,bf16,fp16] [--quick] [--ranks N] [--seed S] [--model-json FILE]

It needs only the Python standard library and torch. Vendor plug-ins (torch_npu for Huawei
Ascend, torch_mlu for Cambricon MLU) are imported only when they are installed; NVIDIA GPUs and
Hygon DCUs (ROCm/DTK builds of torch) are driven through torch.cuda. The bundle
(schema hetplan/calibration-bundle/v1) is described in docs/formats/calibration-bundle.md of the
hetplan repository. All times are seconds, all sizes bytes.
"""

import argparse
import datetime
import glob
import importlib
import importlib.util
import json
import math
import os
import platform
import re
import shutil
import socket
import statistics
import sys
import tempfile
import time
import warnings

PROBE_VERSION = "1"
SCHEMA = "hetplan/calibration-bundle/v1"
DTYPE_NAMES = ("fp32", "fp16", "bf16")
BACKENDS = ("cpu", "cuda", "npu", "mlu")
COLLECTIVE_BACKEND = {"cpu": "gloo", "cuda": "nccl", "npu": "hccl", "mlu": "cncl"}
COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "all_to_all")
OPERATOR_CLASSES = ("gemm", "flash_attention", "attention_unfused", "norm", "activation", "rope",
                    "embedding", "cross_entropy", "optimizer", "dropout")

# The small training step's model. The CPU default is sized for a single step of about a second
# on a 2-core machine with Debian's torch (reference BLAS); accelerators get a bigger default.
STEP_MODEL_CPU = {"layers": 4, "hidden": 256, "heads": 4, "kv_heads": 4, "ffn": 688,
                  "vocab": 4096, "seq": 128, "micro_batch": 1, "dtype": "fp32"}
STEP_MODEL_DEVICE = {"layers": 4, "hidden": 2048, "heads": 16, "kv_heads": 16, "ffn": 5504,
                     "vocab": 32000, "seq": 2048, "micro_batch": 2, "dtype": "bf16"}
GEMM_ALWAYS = 6  # the smallest GEMM shapes, measured even on a very slow device
STEP_MODEL_KEYS = ("layers", "hidden", "heads", "kv_heads", "ffn", "vocab", "seq", "micro_batch",
                   "dtype")

_START = time.perf_counter()


def log(message):
    print(f"[hetplan-probe {time.perf_counter() - _START:6.1f}s] {message}", file=sys.stderr,
          flush=True)


def first_line(exc):
    lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
    text = lines[0] if lines else ""
    if len(text) > 300:
        text = text[:297] + "..."
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def fmt_seconds(seconds):
    if seconds < 1e-3:
        return f"{seconds * 1e6:.1f} us"
    if seconds < 1:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds:.2f} s"


class ProbeError(Exception):
    """A problem the user must fix (bad arguments, backend not available)."""


# --------------------------------------------------------------------------------------------
# Backend: device, synchronization, host description


def _import_vendor(name):
    if importlib.util.find_spec(name) is None:
        return None, f"{name} is not installed"
    try:
        return importlib.import_module(name), None
    except Exception as exc:  # a broken vendor install must not crash the probe
        return None, f"import {name} failed: {first_line(exc)}"


class Backend:
    def __init__(self, torch, name, vendor=None):
        self.torch = torch
        self.name = name
        self.vendor = vendor  # torch_npu / torch_mlu module, or None
        self.device = torch.device("cpu" if name == "cpu" else f"{name}:0")
        self.module = getattr(torch, name, None) if name != "cpu" else None  # torch.cuda ...

    def sync(self):
        if self.module is not None:
            self.module.synchronize()

    def empty_cache(self):
        if self.module is not None and hasattr(self.module, "empty_cache"):
            try:
                self.module.empty_cache()
            except Exception:
                pass

    def device_count(self):
        if self.module is None:
            return 1
        return int(self.module.device_count())

    def free_memory(self):
        """Free bytes on the device (host memory available on CPU), or None."""
        if self.module is None:
            try:
                with open("/proc/meminfo") as f:
                    for line in f:
                        if line.startswith("MemAvailable:"):
                            return int(line.split()[1]) * 1024
            except OSError:
                return None
            return None
        try:
            return int(self.module.mem_get_info()[0])
        except Exception:
            return None


def detect_backend(torch, requested):
    reasons = {}
    order = ["npu", "mlu", "cuda"] if requested == "auto" else [requested]
    for name in order:
        if name == "cpu":
            return Backend(torch, "cpu")
        vendor = None
        if name in ("npu", "mlu"):
            vendor, why = _import_vendor("torch_" + name)
            if vendor is None:
                reasons[name] = why
                continue
        module = getattr(torch, name, None)
        try:
            available = module is not None and module.is_available() and module.device_count() > 0
        except Exception as exc:
            available = False
            reasons[name] = first_line(exc)
        if available:
            return Backend(torch, name, vendor)
        reasons.setdefault(name, f"torch.{name}.is_available() is false")
    if requested != "auto":
        raise ProbeError(f"backend {requested} was requested but is not available: "
                         f"{reasons.get(requested, 'unknown reason')}")
    log("no accelerator found (" + "; ".join(f"{k}: {v}" for k, v in reasons.items()) +
        "); measuring the CPU")
    return Backend(torch, "cpu")


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


def _read_first_line(path):
    try:
        with open(path) as f:
            return f.readline().strip()
    except OSError:
        return ""


def _version_from_info_files(patterns):
    for pattern in patterns:
        for path in sorted(glob.glob(pattern)):
            try:
                with open(path) as f:
                    text = f.read(4096)
            except OSError:
                continue
            match = re.search(r"version\s*[=:]\s*\[?\s*([0-9][0-9A-Za-z.\-]*)", text)
            if match:
                return match.group(1)
            first = text.strip().splitlines()[0] if text.strip() else ""
            if re.match(r"^[0-9][0-9A-Za-z.\-]*$", first):
                return first
    return ""


def runtime_info(backend, device_name):
    torch = backend.torch
    if backend.name == "cuda":
        hip = getattr(torch.version, "hip", None)
        if hip:
            roots = [os.environ.get(k, "") for k in ("DTK_HOME", "DTK_PATH", "ROCM_PATH")]
            roots += ["/opt/dtk", "/opt/rocm"]
            is_dtk = (bool(getattr(torch.version, "dtk", None))
                      or any("dtk" in r.lower() for r in roots[:3] if r)
                      or os.path.isdir("/opt/dtk")
                      or re.search(r"\b(DCU|Hygon|K100|Z100|BW)\b", device_name or "") is not None)
            version = str(getattr(torch.version, "dtk", "") or "")
            if not version:
                for root in roots:
                    if root and os.path.isdir(root):
                        version = _read_first_line(os.path.join(root, ".info", "version"))
                        if version:
                            break
            return {"name": "DTK" if is_dtk else "ROCm", "version": version or str(hip)}
        return {"name": "CUDA", "version": str(torch.version.cuda or "unknown")}
    if backend.name == "npu":
        version = ""
        try:  # newer torch_npu
            version = str(backend.vendor.npu.utils.get_cann_version())
        except Exception:
            version = ""
        if not version or version.lower() in ("none", "unknown"):
            homes = [os.environ.get(k, "") for k in ("ASCEND_TOOLKIT_HOME", "ASCEND_HOME_PATH")]
            homes += ["/usr/local/Ascend/ascend-toolkit/latest"]
            patterns = []
            for home in homes:
                if home:
                    patterns += [os.path.join(home, "*", "ascend_toolkit_install.info"),
                                 os.path.join(home, "ascend_toolkit_install.info"),
                                 os.path.join(home, "version.cfg")]
            version = _version_from_info_files(patterns)
        return {"name": "CANN", "version": version or "unknown"}
    if backend.name == "mlu":
        version = str(getattr(torch.version, "mlu", "") or "")
        if not version:
            home = os.environ.get("NEUWARE_HOME", "/usr/local/neuware")
            version = _version_from_info_files([os.path.join(home, "version.txt"),
                                                os.path.join(home, "VERSION")])
            if not version:
                libs = sorted(glob.glob(os.path.join(home, "lib64", "libcnrt.so.*.*")))
                if libs:
                    version = "cnrt " + libs[-1].split("libcnrt.so.", 1)[1]
        return {"name": "Neuware", "version": version or "unknown"}
    return {"name": "CPU", "version": str(torch.__version__)}


def host_info(backend):
    torch = backend.torch
    if backend.name == "cpu":
        device = cpu_model()
    else:
        try:
            device = str(backend.module.get_device_name(0))
        except Exception as exc:
            device = f"unknown {backend.name} device ({first_line(exc)})"
    return {
        "hostname": socket.gethostname(),
        "backend": backend.name,
        "device": device,
        "devices": backend.device_count(),
        "threads": int(torch.get_num_threads()),
        "torch": str(torch.__version__),
        "runtime": runtime_info(backend, device),
        "collective_backend": COLLECTIVE_BACKEND[backend.name],
    }


def torch_dtype(torch, name):
    return {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[name]


# --------------------------------------------------------------------------------------------
# Timing


def summary(backend, samples):
    """The figure kept of repeated samples: on a CPU, shared with whatever else the host runs,
    interference only ever adds time, so the fastest sample is the one least disturbed; on an
    accelerator, the median."""
    return min(samples) if backend.name == "cpu" else statistics.median(samples)


class Timer:
    """Warm-up, then repeated samples (summary() keeps one figure); a sample runs the function
    `inner` times back to back between two synchronizations so that tiny kernels are not all
    launch cost."""

    def __init__(self, backend, quick):
        self.backend = backend
        self.quick = quick
        self.min_sample = 1e-3 if backend.name == "cpu" else 2e-3
        self.warmup = 1 if backend.name == "cpu" else 3

    def measure(self, fn, budget, min_reps=3, max_reps=30, warmup=None):
        sync = self.backend.sync
        for _ in range(self.warmup if warmup is None else warmup):
            fn()
        sync()
        start = time.perf_counter()
        fn()
        sync()
        one = max(time.perf_counter() - start, 1e-7)
        inner = 1 if one >= self.min_sample else min(1000, math.ceil(self.min_sample / one))
        reps = max(min_reps, min(max_reps, int(budget / (one * inner))))
        samples = []
        for _ in range(reps):
            sync()
            start = time.perf_counter()
            for _ in range(inner):
                fn()
            sync()
            samples.append((time.perf_counter() - start) / inner)
        return summary(self.backend, samples)


def positive(seconds):
    """Times must be positive; a difference lost in noise is floored at 1 ns."""
    return max(float(seconds), 1e-9)


# --------------------------------------------------------------------------------------------
# Model pieces: math attention, rotary embedding, norms, a LLaMA-style decoder layer


_MASKS = {}


def causal_mask(torch, seq, device):
    key = (seq, str(device))
    if key not in _MASKS:
        _MASKS[key] = torch.ones(seq, seq, dtype=torch.bool).triu(1).to(device)
    return _MASKS[key]


def math_attention(torch, q, k, v, causal):
    """softmax(Q K^T / sqrt(d)) V, unfused."""
    scores = torch.matmul(q, k.transpose(-2, -1)) * (1.0 / math.sqrt(q.shape[-1]))
    if causal:
        scores = scores.masked_fill(causal_mask(torch, q.shape[-2], q.device), float("-inf"))
    return torch.matmul(torch.softmax(scores, dim=-1), v)


def has_sdpa(torch):
    return hasattr(torch.nn.functional, "scaled_dot_product_attention")


def attention(torch, q, k, v, causal, kernel):
    if kernel == "sdpa":
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
    return math_attention(torch, q, k, v, causal)


def rotary_tables(torch, seq, head_dim, dtype, device, base=10000.0):
    inv = 1.0 / (base ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim))
    angles = torch.outer(torch.arange(seq, dtype=torch.float32), inv)
    angles = torch.cat([angles, angles], dim=-1)
    return angles.cos().to(device=device, dtype=dtype), angles.sin().to(device=device, dtype=dtype)


def apply_rotary(torch, x, cos, sin):
    half = x.shape[-1] // 2
    rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    return x * cos + rotated * sin


def rms_norm(torch, x, weight, eps=1e-6):
    functional = torch.nn.functional
    if hasattr(functional, "rms_norm"):
        return functional.rms_norm(x, (x.shape[-1],), weight, eps)
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * weight


def build_model_classes(torch):
    nn = torch.nn
    functional = torch.nn.functional

    class Norm(nn.Module):
        def __init__(self, dim, kind):
            super().__init__()
            self.kind = kind
            self.weight = nn.Parameter(torch.ones(dim))
            if kind == "layernorm":
                self.bias = nn.Parameter(torch.zeros(dim))

        def forward(self, x):
            if self.kind == "rmsnorm":
                return rms_norm(torch, x, self.weight)
            return functional.layer_norm(x, (x.shape[-1],), self.weight, self.bias)

    class MoeMlp(nn.Module):
        """A mixture's MLP as Megatron-Core runs it without expert parallelism: the router
        (fp32 softmax, top-k, the k weights renormalised), each token's copies sorted by expert
        and gathered (the permutation), each expert's SwiGLU MLP, the outputs weighted and
        added back to their tokens (the unpermutation). Without `grouped` every expert runs its
        own GEMMs, as SequentialMLP does, after reading the per-expert counts on the host (a
        device-to-host synchronisation in every forward pass); with it one torch._grouped_mm
        per projection covers all experts (the counts stay on the device)."""

        def __init__(self, hidden, experts, top_k, expert_ffn, grouped):
            super().__init__()
            self.experts, self.top_k, self.grouped = experts, top_k, grouped
            self.router = nn.Linear(hidden, experts, bias=False)
            self.w13 = nn.Parameter(torch.randn(experts, 2 * expert_ffn, hidden) /
                                    math.sqrt(hidden))
            self.w2 = nn.Parameter(torch.randn(experts, hidden, expert_ffn) /
                                   math.sqrt(expert_ffn))

        def forward(self, x):
            shape = x.shape
            x = x.reshape(-1, shape[-1])
            probs = torch.softmax(self.router(x).float(), dim=-1)
            weights, chosen = torch.topk(probs, self.top_k, dim=-1)
            weights = weights / weights.sum(dim=-1, keepdim=True)
            flat = chosen.reshape(-1)
            _, order = torch.sort(flat, stable=True)
            token = torch.div(order, self.top_k, rounding_mode="floor")
            counts = torch.bincount(flat, minlength=self.experts)
            routed = x.index_select(0, token)
            if self.grouped:
                offsets = torch.cumsum(counts, 0).to(torch.int32)
                gate_up = torch._grouped_mm(routed, self.w13.transpose(-2, -1), offs=offsets)
                gate, up = gate_up.chunk(2, dim=-1)
                y = torch._grouped_mm(functional.silu(gate) * up, self.w2.transpose(-2, -1),
                                      offs=offsets)
            else:
                parts = []
                for expert, rows in enumerate(torch.split(routed, counts.tolist())):
                    gate, up = (rows @ self.w13[expert].t()).chunk(2, dim=-1)
                    parts.append((functional.silu(gate) * up) @ self.w2[expert].t())
                y = torch.cat(parts)
            y = y * weights.reshape(-1).index_select(0, order).to(y.dtype).unsqueeze(-1)
            return torch.zeros_like(x).index_add_(0, token, y).reshape(shape)

    class DecoderLayer(nn.Module):
        """LLaMA-style: norm, Q/K/V, rotary, causal attention, O, residual, norm, MLP
        (SwiGLU gate/up/down, GELU up/down, or a mixture of SwiGLU experts when `moe` gives
        experts, experts_per_token, expert_ffn and grouped), residual. No linear biases."""

        def __init__(self, hidden, heads, kv_heads, ffn, activation="swiglu", norm="rmsnorm",
                     kernel="math", moe=None):
            super().__init__()
            self.heads, self.kv_heads = heads, kv_heads
            self.head_dim = hidden // heads
            self.activation = activation
            self.kernel = kernel
            self.norm1 = Norm(hidden, norm)
            self.q = nn.Linear(hidden, heads * self.head_dim, bias=False)
            self.k = nn.Linear(hidden, kv_heads * self.head_dim, bias=False)
            self.v = nn.Linear(hidden, kv_heads * self.head_dim, bias=False)
            self.o = nn.Linear(heads * self.head_dim, hidden, bias=False)
            self.norm2 = Norm(hidden, norm)
            self.moe = None
            if moe is not None:
                self.moe = MoeMlp(hidden, moe["experts"], moe["experts_per_token"],
                                  moe["expert_ffn"], moe["grouped"])
                return
            if activation == "swiglu":
                self.gate = nn.Linear(hidden, ffn, bias=False)
            self.up = nn.Linear(hidden, ffn, bias=False)
            self.down = nn.Linear(ffn, hidden, bias=False)

        def forward(self, x, cos, sin):
            b, s, _ = x.shape
            h = self.norm1(x)
            q = self.q(h).view(b, s, self.heads, self.head_dim).transpose(1, 2)
            k = self.k(h).view(b, s, self.kv_heads, self.head_dim).transpose(1, 2)
            v = self.v(h).view(b, s, self.kv_heads, self.head_dim).transpose(1, 2)
            q = apply_rotary(torch, q, cos, sin)
            k = apply_rotary(torch, k, cos, sin)
            if self.kv_heads != self.heads:
                k = k.repeat_interleave(self.heads // self.kv_heads, dim=1)
                v = v.repeat_interleave(self.heads // self.kv_heads, dim=1)
            a = attention(torch, q, k, v, True, self.kernel)
            x = x + self.o(a.transpose(1, 2).reshape(b, s, self.heads * self.head_dim))
            h = self.norm2(x)
            if self.moe is not None:
                return x + self.moe(h)
            if self.activation == "swiglu":
                m = functional.silu(self.gate(h)) * self.up(h)
            else:
                m = functional.gelu(self.up(h))
            return x + self.down(m)

    class SmallLM(nn.Module):
        """Embedding, N decoder layers, final RMSNorm, untied LM head."""

        def __init__(self, cfg, kernel):
            super().__init__()
            self.embed = nn.Embedding(cfg["vocab"], cfg["hidden"])
            self.layers = nn.ModuleList(
                DecoderLayer(cfg["hidden"], cfg["heads"], cfg["kv_heads"], cfg["ffn"], "swiglu",
                             "rmsnorm", kernel) for _ in range(cfg["layers"]))
            self.norm = Norm(cfg["hidden"], "rmsnorm")
            self.head = nn.Linear(cfg["hidden"], cfg["vocab"], bias=False)

        def forward(self, tokens, cos, sin):
            x = self.embed(tokens)
            for layer in self.layers:
                x = layer(x, cos, sin)
            return self.head(self.norm(x))

    return DecoderLayer, SmallLM


# --------------------------------------------------------------------------------------------
# The probe


class Probe:
    def __init__(self, torch, backend, args, step_model):
        self.torch = torch
        self.backend = backend
        self.args = args
        self.quick = args.quick
        self.cpu = backend.name == "cpu"
        self.timer = Timer(backend, args.quick)
        self.step_model = step_model
        self.skipped = []
        self.bundle = {}
        self.dtypes = []  # measured dtypes, requested order
        self.DecoderLayer, self.SmallLM = build_model_classes(torch)
        self.kernel = "sdpa" if has_sdpa(torch) else "math"

    # --- helpers

    def skip(self, what, why):
        self.skipped.append({"what": what, "why": why})
        log(f"skipped {what}: {why}")

    def seed(self):
        self.torch.manual_seed(self.args.seed)

    def randn(self, *shape, dtype="fp32", requires_grad=False):
        torch = self.torch
        t = torch.randn(*shape, device=self.backend.device, dtype=torch.float32)
        t = t.to(torch_dtype(torch, dtype))
        if requires_grad:
            t.requires_grad_(True)
        return t

    def budget(self):
        """Seconds of repeated samples per measured point."""
        if self.cpu:
            return 0.1 if self.quick else 0.4
        return 0.05 if self.quick else 0.2

    def point_cap(self):
        """A point whose single run is predicted to take longer than this is not measured."""
        if self.cpu:
            return 0.1 if self.quick else 0.6
        return 0.5 if self.quick else 2.0

    def section(self, name, fn):
        log(f"{name} ...")
        try:
            fn()
        except Exception as exc:
            self.skip(name, first_line(exc))
        finally:
            self.backend.empty_cache()

    # --- dtypes

    def probe_dtypes(self):
        torch = self.torch
        result = {}
        for name in DTYPE_NAMES:
            try:
                a = torch.ones(64, 64, device=self.backend.device, dtype=torch_dtype(torch, name))
                c = a @ a
                self.backend.sync()
                ok = bool(torch.isfinite(c.float()).all().item())
                result[name] = ok
                if not ok and name in self.args.dtypes:
                    self.skip(f"dtype:{name}", f"a 64x64 {name} matmul gave non-finite values")
            except Exception as exc:
                result[name] = False
                if name in self.args.dtypes:
                    self.skip(f"dtype:{name}",
                              f"a 64x64 {name} matmul failed on {self.backend.name}: "
                              f"{first_line(exc)}")
        self.bundle["dtypes"] = result
        self.dtypes = [d for d in self.args.dtypes if result[d]]
        log("dtypes: " + ", ".join(f"{k}={'yes' if v else 'no'}" for k, v in result.items()))

    # --- GEMM

    def gemm_shapes(self):
        squares = [(s, s, s) for s in (64, 128, 256, 512, 1024, 2048, 4096)]
        rect = [  # (m, n, k): m tokens, k input features, n output features
            (512, 768, 256), (512, 256, 256), (512, 688, 256), (512, 256, 688),  # hidden 256
            (2048, 3072, 1024), (2048, 1024, 1024), (2048, 2816, 1024), (2048, 1024, 2816),
            (4096, 1024, 4096), (4096, 4096, 1024), (64, 4096, 4096), (256, 4096, 4096),
        ]
        return sorted(squares + rect, key=lambda s: (s[0] * s[1] * s[2], s))

    def run_gemm(self):
        torch = self.torch
        out = self.bundle["gemm"]
        for dtype in self.dtypes:
            self.seed()
            rate = None  # the best FLOP/s so far, to predict the next point's time
            left_out = []
            for index, (m, n, k) in enumerate(self.gemm_shapes()):
                flops = 2.0 * m * n * k
                # The smallest shapes (up to 512x256x256) are always measured.
                if index >= GEMM_ALWAYS and rate is not None and flops / rate > self.point_cap():
                    left_out.append(f"{m}x{n}x{k}")
                    continue
                # Each shape in the three layouts a linear layer runs in training: forward
                # y = x W^T ("nt"), the input gradient g W ("nn") and the weight gradient
                # g^T x ("tn"). Some libraries are much slower in one of them.
                for layout in ("nt", "nn", "tn"):
                    try:
                        if layout == "nt":
                            a = self.randn(m, k, dtype=dtype)
                            b = self.randn(n, k, dtype=dtype)
                            fn = lambda: torch.nn.functional.linear(a, b)
                        elif layout == "nn":
                            a = self.randn(m, k, dtype=dtype)
                            b = self.randn(k, n, dtype=dtype)
                            c = torch.empty(m, n, device=self.backend.device, dtype=a.dtype)
                            fn = lambda: torch.mm(a, b, out=c)
                        else:
                            a = self.randn(k, m, dtype=dtype)
                            b = self.randn(k, n, dtype=dtype)
                            fn = lambda: torch.mm(a.t(), b)
                        seconds = self.timer.measure(fn, self.budget())
                    except Exception as exc:
                        self.skip(f"gemm:{dtype}:{layout}:{m}x{n}x{k}", first_line(exc))
                        continue
                    finally:
                        a = b = c = fn = None
                    rate = max(rate or 0.0, flops / seconds)
                    out.append({"dtype": dtype, "layout": layout, "m": m, "n": n, "k": k,
                                "seconds": seconds})
                    log(f"gemm {dtype} {layout} m={m} n={n} k={k}: {fmt_seconds(seconds)} "
                        f"({flops / seconds / 1e12:.3f} TFLOP/s)")
            if left_out:
                self.skip(f"gemm:{dtype}",
                          f"{len(left_out)} larger shapes not measured ({', '.join(left_out)}): "
                          f"predicted over {self.point_cap()} s per call on this device")

    # --- memory

    def run_memory(self):
        torch = self.torch
        if self.cpu:
            sizes = [1 << 23] if self.quick else [1 << 23, 1 << 25]
        else:
            sizes = [1 << 26] if self.quick else [1 << 26, 1 << 28]
        free = self.backend.free_memory()
        out = self.bundle["memory"]
        for n in sizes:
            if free is not None and 3 * 4 * n > free // 4:
                self.skip(f"memory:{n * 4}", f"three {n * 4}-byte arrays exceed a quarter of the "
                          f"{free} free bytes")
                continue
            a = torch.full((n,), 1.0, device=self.backend.device)
            b = torch.full((n,), 2.0, device=self.backend.device)
            c = torch.full((n,), 0.5, device=self.backend.device)
            kernels = [
                ("copy", 2 * 4 * n, lambda: b.copy_(a)),
                ("scale", 2 * 4 * n, lambda: torch.mul(c, 3.0, out=b)),
                ("add", 3 * 4 * n, lambda: torch.add(a, b, out=c)),
                ("triad", 3 * 4 * n, lambda: torch.add(b, c, alpha=3.0, out=a)),
            ]
            for kernel, nbytes, fn in kernels:
                seconds = self.timer.measure(fn, self.budget())
                out.append({"kernel": kernel, "bytes": nbytes, "seconds": seconds})
                log(f"memory {kernel} {nbytes} B: {fmt_seconds(seconds)} "
                    f"({nbytes / seconds / 1e9:.1f} GB/s)")
            a = b = c = None
            self.backend.empty_cache()

    # --- attention

    def attention_configs(self):
        if self.cpu:
            configs = [(1, 4, 128, 64), (1, 8, 256, 64), (2, 8, 256, 64)]
            if not self.quick:
                configs += [(1, 8, 512, 64), (1, 8, 1024, 64), (1, 16, 1024, 128)]
        else:
            configs = [(8, 16, 512, 64), (4, 32, 1024, 128), (2, 32, 2048, 128),
                       (1, 32, 4096, 128)]
            if not self.quick:
                configs += [(1, 16, 4096, 64), (1, 32, 8192, 128)]
        return configs

    def run_attention(self):
        torch = self.torch
        kernels = ["sdpa", "math"] if has_sdpa(torch) else ["math"]
        if not has_sdpa(torch):
            self.skip("attention:sdpa",
                      f"torch {torch.__version__} has no "
                      "torch.nn.functional.scaled_dot_product_attention; measured the math kernel")
        out = self.bundle["attention"]
        free = self.backend.free_memory()
        for dtype in self.dtypes:
            self.seed()
            elem = torch.tensor([], dtype=torch_dtype(torch, dtype)).element_size()
            for kernel in kernels:
                rate = None
                for batch, heads, seq, head_dim in self.attention_configs():
                    for causal in (True, False):
                        flops = 4.0 * batch * heads * seq * seq * head_dim  # forward
                        what = (f"attention:{kernel}:{dtype}:b{batch}h{heads}s{seq}d{head_dim}"
                                f"{':causal' if causal else ''}")
                        if rate is not None and 3 * flops / rate > self.point_cap():
                            self.skip(what, "predicted over "
                                      f"{self.point_cap()} s per forward+backward on this device")
                            continue
                        if kernel == "math" and free is not None and \
                                4 * batch * heads * seq * seq * max(elem, 4) > free // 2:
                            self.skip(what, "the unfused score matrices would not fit in memory")
                            continue
                        try:
                            q = self.randn(batch, heads, seq, head_dim, dtype=dtype,
                                           requires_grad=True)
                            k = self.randn(batch, heads, seq, head_dim, dtype=dtype,
                                           requires_grad=True)
                            v = self.randn(batch, heads, seq, head_dim, dtype=dtype,
                                           requires_grad=True)
                            g = self.randn(batch, heads, seq, head_dim, dtype=dtype)

                            def forward():
                                return attention(torch, q, k, v, causal, kernel)

                            def forward_backward():
                                torch.autograd.grad(forward(), (q, k, v), g)

                            fwd = self.timer.measure(forward, self.budget())
                            both = self.timer.measure(forward_backward, self.budget())
                        except Exception as exc:
                            self.skip(what, first_line(exc))
                            continue
                        finally:
                            q = k = v = g = None
                            self.backend.empty_cache()
                        rate = max(rate or 0.0, 3 * flops / both)
                        out.append({"dtype": dtype, "batch": batch, "heads": heads, "seq": seq,
                                    "head_dim": head_dim, "causal": causal, "kernel": kernel,
                                    "forward_seconds": positive(fwd),
                                    "backward_seconds": positive(both - fwd)})
                        log(f"attention {kernel} {dtype} b={batch} h={heads} s={seq} "
                            f"d={head_dim} causal={causal}: fwd {fmt_seconds(fwd)}, "
                            f"bwd {fmt_seconds(both - fwd)}")

    # --- element-wise and normalization kernels

    def run_elementwise(self):
        torch = self.torch
        functional = torch.nn.functional
        if self.cpu:
            sizes = [1 << 20] if self.quick else [1 << 20, 1 << 22]
        else:
            sizes = [1 << 24] if self.quick else [1 << 22, 1 << 24, 1 << 26]
        width = 1024  # row length for softmax and the norms
        out = self.bundle["elementwise"]
        for dtype in self.dtypes:
            self.seed()
            for n in sizes:
                x = self.randn(n // width, width, dtype=dtype)
                y = self.randn(n // width, width, dtype=dtype)
                w = torch.ones(width, device=self.backend.device, dtype=x.dtype)
                bias = torch.zeros(width, device=self.backend.device, dtype=x.dtype)
                ops = [
                    ("add", lambda: torch.add(x, y)),
                    ("mul", lambda: torch.mul(x, y)),
                    ("gelu", lambda: functional.gelu(x)),
                    ("silu", lambda: functional.silu(x)),
                    ("softmax", lambda: torch.softmax(x, dim=-1)),
                    ("layernorm", lambda: functional.layer_norm(x, (width,), w, bias)),
                    ("rmsnorm", lambda: rms_norm(torch, x, w)),
                ]
                for op, fn in ops:
                    try:
                        seconds = self.timer.measure(fn, self.budget())
                    except Exception as exc:
                        self.skip(f"elementwise:{op}:{dtype}", first_line(exc))
                        continue
                    out.append({"op": op, "dtype": dtype, "elements": n, "seconds": seconds})
                    log(f"elementwise {op} {dtype} {n}: {fmt_seconds(seconds)}")
                x = y = w = bias = None

    # --- one decoder layer

    def layer_configs(self):
        s = self.step_model
        step_layer = {"hidden": s["hidden"], "heads": s["heads"], "kv_heads": s["kv_heads"],
                      "ffn": s["ffn"], "activation": "swiglu", "norm": "rmsnorm"}
        configs = [(step_layer, s["micro_batch"], s["seq"])]
        gpt = dict(step_layer, activation="gelu", norm="layernorm", ffn=4 * s["hidden"])
        configs.append((gpt, s["micro_batch"], s["seq"]))
        if self.cpu:
            if not self.quick:
                configs.append(({"hidden": 512, "heads": 8, "kv_heads": 8, "ffn": 1376,
                                 "activation": "swiglu", "norm": "rmsnorm"}, 1, 256))
        else:
            configs.append(({"hidden": 4096, "heads": 32, "kv_heads": 32, "ffn": 11008,
                             "activation": "swiglu", "norm": "rmsnorm"}, 1, 2048))
            if not self.quick:
                configs.append(({"hidden": 4096, "heads": 32, "kv_heads": 8, "ffn": 14336,
                                 "activation": "swiglu", "norm": "rmsnorm"}, 1, 4096))
                configs.append(({"hidden": 8192, "heads": 64, "kv_heads": 8, "ffn": 28672,
                                 "activation": "swiglu", "norm": "rmsnorm"}, 1, 4096))
        # Mixture-of-experts layers: the step layer's attention with a mixture in place of its
        # MLP; on accelerators the shapes of a fine-grained mixture (Qwen3-30B-A3B: 128 experts
        # of 768, 8 a token, hidden 2048; 16 heads of 128) and of a coarse one (Mixtral-8x7B:
        # 8 experts of 14336, 2 a token).
        if self.cpu:
            configs.append(({"hidden": s["hidden"], "heads": s["heads"], "kv_heads": s["kv_heads"],
                             "activation": "swiglu", "norm": "rmsnorm", "experts": 8,
                             "experts_per_token": 2, "expert_ffn": s["hidden"]},
                            s["micro_batch"], s["seq"]))
        else:
            configs.append(({"hidden": 2048, "heads": 16, "kv_heads": 4, "activation": "swiglu",
                             "norm": "rmsnorm", "experts": 128, "experts_per_token": 8,
                             "expert_ffn": 768}, 1, 4096))
            if not self.quick:
                configs.append(({"hidden": 4096, "heads": 32, "kv_heads": 8,
                                 "activation": "swiglu", "norm": "rmsnorm", "experts": 8,
                                 "experts_per_token": 2, "expert_ffn": 14336}, 1, 4096))
        return configs

    def run_layer(self):
        torch = self.torch
        out = self.bundle["layer"]
        configs = []
        for model, micro_batch, seq in self.layer_configs():
            if "experts" not in model:
                configs.append((model, micro_batch, seq, None))
                continue
            for grouped in (False, True):
                configs.append((model, micro_batch, seq, grouped))
        for dtype in self.dtypes:
            for model, micro_batch, seq, grouped in configs:
                self.seed()
                what = (f"layer:{dtype}:h{model['hidden']}:{model['activation']}:"
                        f"mb{micro_batch}s{seq}")
                moe, variant = None, ""
                if grouped is not None:
                    variant = (f"moe{model['experts']}x{model['expert_ffn']}"
                               f"top{model['experts_per_token']}:"
                               f"{'grouped' if grouped else 'sequential'}")
                    what += ":" + variant
                    if grouped and not hasattr(torch, "_grouped_mm"):
                        self.skip(what, f"torch {torch.__version__} has no torch._grouped_mm")
                        continue
                    moe = dict(model, grouped=grouped)
                try:
                    layer = self.DecoderLayer(model["hidden"], model["heads"], model["kv_heads"],
                                              model.get("ffn", 0), model["activation"],
                                              model["norm"], self.kernel, moe)
                    layer = layer.to(device=self.backend.device, dtype=torch_dtype(torch, dtype))
                    params = list(layer.parameters())
                    head_dim = model["hidden"] // model["heads"]
                    cos, sin = rotary_tables(torch, seq, head_dim, torch_dtype(torch, dtype),
                                             self.backend.device)
                    x = self.randn(micro_batch, seq, model["hidden"], dtype=dtype,
                                   requires_grad=True)
                    g = self.randn(micro_batch, seq, model["hidden"], dtype=dtype)

                    def forward():
                        return layer(x, cos, sin)

                    def forward_backward():
                        torch.autograd.grad(forward(), [x] + params, g)

                    budget = self.budget() * 2
                    fwd = self.timer.measure(forward, budget, max_reps=10)
                    both = self.timer.measure(forward_backward, budget, max_reps=10)
                except Exception as exc:
                    self.skip(what, first_line(exc))
                    continue
                finally:
                    layer = params = x = g = cos = sin = None
                    self.backend.empty_cache()
                entry = {"model": model, "dtype": dtype, "micro_batch": micro_batch, "seq": seq}
                if grouped is not None:
                    entry["grouped_gemm"] = grouped
                entry["forward_seconds"] = positive(fwd)
                entry["backward_seconds"] = positive(both - fwd)
                out.append(entry)
                log(f"layer {dtype} hidden={model['hidden']} {model['activation']} "
                    f"mb={micro_batch} seq={seq}{' ' + variant if variant else ''}: "
                    f"fwd {fmt_seconds(fwd)}, bwd {fmt_seconds(both - fwd)}")

    # --- a real small training step (held out: measured, never fitted)

    def run_step(self):
        torch = self.torch
        functional = torch.nn.functional
        cfg = self.step_model
        dtype = cfg["dtype"]
        if dtype not in self.dtypes:
            fallback = "fp32" if "fp32" in self.dtypes else (self.dtypes[0] if self.dtypes else None)
            if fallback is None:
                raise RuntimeError("no dtype ran on this device")
            log(f"step dtype {dtype} is not measured on this device; using {fallback}")
            self.skip(f"step:{dtype}", f"{dtype} is not among the measured dtypes; the step ran "
                      f"in {fallback}")
            dtype = fallback
        self.seed()
        model = self.SmallLM(cfg, self.kernel).to(device=self.backend.device,
                                                  dtype=torch_dtype(torch, dtype))
        model.train()
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01)
        head_dim = cfg["hidden"] // cfg["heads"]
        cos, sin = rotary_tables(torch, cfg["seq"], head_dim, torch_dtype(torch, dtype),
                                 self.backend.device)
        data = torch.randint(0, cfg["vocab"], (cfg["micro_batch"], cfg["seq"] + 1),
                             device=self.backend.device)
        inputs, targets = data[:, :-1], data[:, 1:]

        def step():
            logits = model(inputs, cos, sin)
            loss = functional.cross_entropy(logits.reshape(-1, cfg["vocab"]).float(),
                                            targets.reshape(-1))
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            return loss

        warmup, reps = (2, 3) if self.quick else (3, 7)
        for _ in range(warmup):
            loss = step()
        self.backend.sync()
        if not math.isfinite(float(loss.item())):
            raise RuntimeError("the training step's loss is not finite")
        samples = []
        for _ in range(reps):
            self.backend.sync()
            start = time.perf_counter()
            step()
            self.backend.sync()
            samples.append(time.perf_counter() - start)
        seconds = summary(self.backend, samples)
        self.bundle["step"].append({
            "model": {"layers": cfg["layers"], "hidden": cfg["hidden"], "heads": cfg["heads"],
                      "kv_heads": cfg["kv_heads"], "ffn": cfg["ffn"], "vocab": cfg["vocab"],
                      "activation": "swiglu", "norm": "rmsnorm", "tied_embeddings": False},
            "dtype": dtype, "micro_batch": cfg["micro_batch"], "seq": cfg["seq"],
            "optimizer": "adamw", "seconds": seconds})
        params = sum(p.numel() for p in model.parameters())
        log(f"step {cfg['layers']} layers, {params / 1e6:.1f} M parameters, {dtype}, "
            f"mb={cfg['micro_batch']} seq={cfg['seq']}: {fmt_seconds(seconds)} "
            f"(samples {', '.join(fmt_seconds(s) for s in samples)})")

    # --- operator coverage

    def _flash_attention_check(self, dtype):
        torch = self.torch
        if self.backend.name == "npu" and hasattr(self.backend.vendor, "npu_fusion_attention"):
            q, k, v = (self.randn(1, 4, 256, 64, dtype=dtype, requires_grad=True)
                       for _ in range(3))
            mask = causal_mask(torch, 256, self.backend.device)
            out = self.backend.vendor.npu_fusion_attention(
                q, k, v, 4, "BNSD", atten_mask=mask, scale=1.0 / 8.0, pre_tockens=65536,
                next_tockens=0)[0]
            out.sum().backward()
            return f"torch_npu.npu_fusion_attention ({dtype}, causal, forward and backward)"
        if not has_sdpa(torch):
            raise _Missing(f"torch {torch.__version__} has no scaled_dot_product_attention, so "
                           f"no fused flash-attention kernel on {self.backend.name}")
        context = None
        try:
            from torch.nn.attention import SDPBackend, sdpa_kernel  # torch >= 2.3
            context = sdpa_kernel(SDPBackend.FLASH_ATTENTION)
        except ImportError:
            if self.backend.name == "cuda" and hasattr(torch.backends.cuda, "sdp_kernel"):
                context = torch.backends.cuda.sdp_kernel(enable_flash=True, enable_math=False,
                                                         enable_mem_efficient=False)
        if context is None:
            raise _Missing(f"torch {torch.__version__} cannot select the flash kernel of "
                           f"scaled_dot_product_attention on {self.backend.name}")
        q, k, v = (self.randn(1, 4, 256, 64, dtype=dtype, requires_grad=True) for _ in range(3))
        with context:
            out = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
            out.sum().backward()
        return f"scaled_dot_product_attention with only the flash kernel enabled ({dtype})"

    def run_operators(self):
        torch = self.torch
        functional = torch.nn.functional
        dtype = self.dtypes[0]
        half = next((d for d in self.dtypes if d in ("bf16", "fp16")), dtype)
        device = self.backend.device
        tdtype = torch_dtype(torch, dtype)

        def gemm():
            a = self.randn(128, 256, dtype=dtype, requires_grad=True)
            b = self.randn(256, 64, dtype=dtype, requires_grad=True)
            (a @ b).sum().backward()
            return f"matmul forward and backward ({dtype})"

        def unfused():
            q, k, v = (self.randn(1, 4, 128, 64, dtype=dtype, requires_grad=True)
                       for _ in range(3))
            math_attention(torch, q, k, v, True).sum().backward()
            return f"softmax(QK^T/sqrt(d))V from matmul, masked_fill and softmax ({dtype})"

        def norm():
            x = self.randn(64, 256, dtype=dtype, requires_grad=True)
            w = torch.ones(256, device=device, dtype=tdtype, requires_grad=True)
            b = torch.zeros(256, device=device, dtype=tdtype, requires_grad=True)
            (functional.layer_norm(x, (256,), w, b).sum() + rms_norm(torch, x, w).sum()).backward()
            how = "torch.nn.functional.rms_norm" if hasattr(functional, "rms_norm") else \
                "RMSNorm composed of pow, mean, rsqrt and mul"
            return f"layer_norm and {how} ({dtype})"

        def activation():
            x = self.randn(64, 256, dtype=dtype, requires_grad=True)
            (functional.gelu(x).sum() + functional.silu(x).sum()).backward()
            return f"gelu and silu forward and backward ({dtype})"

        def rope():
            x = self.randn(1, 4, 128, 64, dtype=dtype, requires_grad=True)
            cos, sin = rotary_tables(torch, 128, 64, tdtype, device)
            apply_rotary(torch, x, cos, sin).sum().backward()
            return f"rotary embedding composed of mul, cat and add ({dtype})"

        def embedding():
            table = self.randn(1000, 64, dtype=dtype, requires_grad=True)
            ids = torch.randint(0, 1000, (4, 32), device=device)
            functional.embedding(ids, table).sum().backward()
            return f"embedding forward and backward ({dtype})"

        def cross_entropy():
            logits = self.randn(64, 1000, dtype=dtype, requires_grad=True)
            targets = torch.randint(0, 1000, (64,), device=device)
            functional.cross_entropy(logits, targets).backward()
            return f"cross_entropy forward and backward ({dtype})"

        def optimizer():
            p = torch.nn.Parameter(self.randn(256, 256, dtype=dtype))
            p.grad = torch.ones_like(p)
            how = "torch.optim.AdamW"
            if self.backend.name == "cuda":
                try:
                    torch.optim.AdamW([p], lr=1e-3, fused=True).step()
                    return f"{how} (fused=True available) ({dtype})"
                except Exception:
                    pass
            torch.optim.AdamW([p], lr=1e-3).step()
            return f"{how} step ({dtype})"

        def dropout():
            x = self.randn(64, 256, dtype=dtype, requires_grad=True)
            functional.dropout(x, 0.1, training=True).sum().backward()
            return f"dropout forward and backward ({dtype})"

        checks = {"gemm": gemm, "flash_attention": lambda: self._flash_attention_check(half),
                  "attention_unfused": unfused, "norm": norm, "activation": activation,
                  "rope": rope, "embedding": embedding, "cross_entropy": cross_entropy,
                  "optimizer": optimizer, "dropout": dropout}
        out = self.bundle["operators"]
        for cls in OPERATOR_CLASSES:
            self.seed()
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                try:
                    detail = checks[cls]()
                    self.backend.sync()
                    status = "native"
                except _Missing as exc:
                    status, detail = "missing", str(exc)
                except Exception as exc:
                    status, detail = "missing", first_line(exc)
            if status == "native" and self.backend.name in ("npu", "mlu"):
                for w in caught:
                    text = str(w.message)
                    if re.search(r"fall(s|ing)?[ _-]?back", text, re.I) and \
                            re.search(r"\bcpu\b", text, re.I):
                        status = "fallback"
                        detail += "; " + text.strip().splitlines()[0][:200]
                        break
            out.append({"class": cls, "status": status, "detail": detail})
            log(f"operator {cls}: {status} ({detail})")

    # --- collectives

    def run_collectives(self):
        ranks = self.args.ranks
        name = self.backend.name
        if ranks < 2:
            self.skip("collectives", f"--ranks {ranks}: collectives need at least 2 ranks")
            return
        if name != "cpu":
            devices = self.backend.device_count()
            if devices < 2:
                self.skip("collectives", f"{devices} {name} device on this node; "
                          f"{COLLECTIVE_BACKEND[name]} needs one device per rank")
                return
            if devices < ranks:
                self.skip("collectives:ranks", f"--ranks {ranks} but only {devices} {name} "
                          f"devices; ran with {devices} ranks")
                ranks = devices
        if self.cpu:
            top = (4 << 20) if self.quick else (64 << 20)
        else:
            top = (64 << 20) if self.quick else (1 << 30)
        sizes = []
        size = 1024
        while size <= top:
            sizes.append(size)
            size *= 4
        import torch.multiprocessing as mp
        workdir = tempfile.mkdtemp(prefix="hetplan-probe-")
        result_path = os.path.join(workdir, "result.json")
        init = "file://" + os.path.join(workdir, "rendezvous")
        limit = 120 if self.quick else 600
        try:
            context = mp.start_processes(
                _collective_worker, args=(ranks, name, init, sizes, self.quick, result_path),
                nprocs=ranks, join=False, start_method="spawn")
            deadline = time.monotonic() + limit
            try:
                while not context.join(timeout=1):
                    if time.monotonic() > deadline:
                        raise TimeoutError(f"the {ranks} collective ranks ran past {limit} s")
            except Exception as exc:
                for process in context.processes:
                    if process.is_alive():
                        process.terminate()
                # A rank's failure arrives as its whole traceback: keep the error's last line.
                lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
                if lines and not isinstance(exc, TimeoutError):
                    raise RuntimeError(f"a collective rank failed: {lines[-1][:300]}") from exc
                raise
            with open(result_path) as f:
                result = json.load(f)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
        self.bundle["collectives"].extend(result["collectives"])
        for item in result["skipped"]:
            self.skip(item["what"], item["why"])
        for c in result["collectives"]:
            log(f"collective {c['collective']} ranks={c['ranks']} {c['bytes']} B: "
                f"{fmt_seconds(c['seconds'])}")

    # --- all

    def run(self):
        b = self.bundle
        for key in ("gemm", "memory", "attention", "elementwise", "layer", "step", "operators",
                    "collectives"):
            b[key] = []
        self.probe_dtypes()
        if not self.dtypes:
            self.skip("measurements", "none of the requested dtypes "
                      f"({','.join(self.args.dtypes)}) ran on {self.backend.name}")
        else:
            self.section("gemm", self.run_gemm)
            self.section("memory", self.run_memory)
            self.section("attention", self.run_attention)
            self.section("elementwise", self.run_elementwise)
            self.section("layer", self.run_layer)
            self.section("step", self.run_step)
            self.section("operators", self.run_operators)
        self.section("collectives", self.run_collectives)


class _Missing(Exception):
    """An operator class that is known to be absent, with the reason."""


# --------------------------------------------------------------------------------------------
# Collective worker: one process per rank (torch.multiprocessing spawn)


def _collective_worker(rank, world, backend_name, init, sizes, quick, result_path):
    import datetime as _dt

    import torch
    import torch.distributed as dist
    if backend_name in ("npu", "mlu"):
        importlib.import_module("torch_" + backend_name)
    module = getattr(torch, backend_name, None) if backend_name != "cpu" else None
    if module is not None:
        module.set_device(rank)
        device = torch.device(f"{backend_name}:{rank}")
    else:
        device = torch.device("cpu")

    def sync():
        if module is not None:
            module.synchronize()

    coll_backend = COLLECTIVE_BACKEND[backend_name]
    warnings.filterwarnings("ignore", message=r".*private function.*")
    dist.init_process_group(coll_backend, init_method=init, rank=rank, world_size=world,
                            timeout=_dt.timedelta(seconds=120))

    def barrier():
        if backend_name == "cuda":
            dist.barrier(device_ids=[rank])
        else:
            dist.barrier()

    def make(collective, nbytes):
        """Returns (fn, bytes) for one call, or raises if the backend lacks the collective."""
        elems = nbytes // 4
        if collective == "all_reduce":
            x = torch.ones(elems, device=device)
            return (lambda: dist.all_reduce(x)), elems * 4, "all_reduce"
        if collective == "broadcast":
            x = torch.ones(elems, device=device)
            return (lambda: dist.broadcast(x, src=0)), elems * 4, "broadcast"
        per = max(1, elems // world)
        if collective == "all_gather":
            x = torch.ones(per, device=device)
            y = torch.empty(per * world, device=device)
            parts = list(y.chunk(world))
            candidates = [("all_gather_into_tensor", lambda: dist.all_gather_into_tensor(y, x)),
                          ("_all_gather_base", lambda: dist._all_gather_base(y, x)),
                          ("all_gather", lambda: dist.all_gather(parts, x))]
        elif collective == "all_to_all":  # bytes = a rank's send buffer, as nccl-tests counts
            x = torch.ones(per * world, device=device)
            y = torch.empty(per * world, device=device)
            candidates = [("all_to_all_single", lambda: dist.all_to_all_single(y, x))]
        else:  # reduce_scatter: bytes = the input size
            x = torch.ones(per * world, device=device)
            y = torch.empty(per, device=device)
            parts = list(x.chunk(world))
            candidates = [("reduce_scatter_tensor", lambda: dist.reduce_scatter_tensor(y, x)),
                          ("_reduce_scatter_base", lambda: dist._reduce_scatter_base(y, x)),
                          ("reduce_scatter", lambda: dist.reduce_scatter(y, parts))]
        return candidates, per * world * 4, None

    collectives, skipped = [], []
    for collective in COLLECTIVES:
        # Find an API the backend supports, with a small call; every rank fails alike.
        made = make(collective, 1024)
        if made[2] is None:
            chosen, errors = None, []
            for api, fn in made[0]:
                if not hasattr(dist, api):
                    continue
                try:
                    fn()
                    sync()
                    chosen = api
                    break
                except Exception as exc:
                    errors.append(f"{api}: {first_line(exc)}")
            barrier()
            if chosen is None:
                skipped.append({"what": f"collectives:{collective}",
                                "why": f"{coll_backend} in torch {torch.__version__} does not "
                                       f"support it ({'; '.join(errors) or 'no API'})"})
                continue
        else:
            chosen = made[2]
        for nbytes in sizes:
            fn, actual, _ = make(collective, nbytes)
            if isinstance(fn, list):
                fn = dict(fn)[chosen]
            reps = (10 if nbytes <= (1 << 20) else 5) if quick else \
                (20 if nbytes <= (1 << 20) else 10)
            for _ in range(2):
                fn()
            sync()
            times = []
            for _ in range(reps):
                barrier()
                sync()
                start = time.perf_counter()
                fn()
                sync()
                times.append(time.perf_counter() - start)
            if rank == 0:
                collectives.append({"collective": collective, "ranks": world, "bytes": actual,
                                    "seconds": positive(statistics.median(times))})
            fn = None
    barrier()
    if rank == 0:
        tmp = result_path + ".tmp"
        with open(tmp, "w") as f:
            json.dump({"collectives": collectives, "skipped": skipped}, f)
        os.replace(tmp, result_path)
    dist.destroy_process_group()


# --------------------------------------------------------------------------------------------
# Command line


def parse_args(argv):
    parser = argparse.ArgumentParser(
        description="hetplan calibration probe: measures this node with PyTorch and writes one "
                    "calibration bundle (docs/formats/calibration-bundle.md).")
    parser.add_argument("--out", required=True, help="the bundle to write (JSON)")
    parser.add_argument("--backend", default="auto", choices=("auto",) + BACKENDS)
    parser.add_argument("--dtypes", default="fp32,bf16,fp16",
                        help="comma-separated, from fp32, bf16, fp16 (default: all three)")
    parser.add_argument("--quick", action="store_true", help="fewer, smaller points")
    parser.add_argument("--ranks", type=int, default=2,
                        help="processes for the collectives on this node (default 2)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--model-json", help="JSON object overriding the training step's model: "
                        + ", ".join(STEP_MODEL_KEYS))
    args = parser.parse_args(argv)
    dtypes = [d.strip() for d in args.dtypes.split(",") if d.strip()]
    bad = [d for d in dtypes if d not in DTYPE_NAMES]
    if bad or not dtypes:
        parser.error(f"--dtypes: expected a comma-separated list of fp32, bf16, fp16; got "
                     f"{args.dtypes!r}")
    args.dtypes = list(dict.fromkeys(dtypes))
    if args.seed < 0:
        parser.error("--seed: expected a non-negative integer")
    if args.ranks < 0:
        parser.error("--ranks: expected a non-negative integer")
    return args


def load_step_model(args, backend_name):
    cfg = dict(STEP_MODEL_CPU if backend_name == "cpu" else STEP_MODEL_DEVICE)
    if not args.model_json:
        return cfg
    try:
        with open(args.model_json) as f:
            override = json.load(f)
    except (OSError, ValueError) as exc:
        raise ProbeError(f"--model-json {args.model_json}: {first_line(exc)}")
    if not isinstance(override, dict):
        raise ProbeError(f"--model-json {args.model_json}: expected a JSON object")
    for key, value in override.items():
        if key not in STEP_MODEL_KEYS:
            raise ProbeError(f"--model-json {args.model_json}: unknown key {key!r} (expected "
                             f"{', '.join(STEP_MODEL_KEYS)})")
        if key == "dtype":
            if value not in DTYPE_NAMES:
                raise ProbeError(f"--model-json: dtype must be one of {', '.join(DTYPE_NAMES)}")
        elif not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ProbeError(f"--model-json: {key} must be a positive integer")
        cfg[key] = value
    if cfg["hidden"] % cfg["heads"] or cfg["heads"] % cfg["kv_heads"] or \
            (cfg["hidden"] // cfg["heads"]) % 2:
        raise ProbeError("--model-json: hidden must be a multiple of heads, heads a multiple of "
                         "kv_heads, and hidden/heads even")
    return cfg


def write_atomically(path, document):
    path = os.path.abspath(path)
    directory = os.path.dirname(path)
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp",
                               dir=directory)
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        with os.fdopen(fd, "w") as f:
            json.dump(document, f, indent=1, allow_nan=False)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    started = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    wall = time.perf_counter()
    try:
        import torch
    except Exception as exc:
        print(f"hetplan-probe: error: cannot import torch with {sys.executable}: "
              f"{first_line(exc)}. Install PyTorch for this Python (on Debian: "
              "apt-get install python3-torch; hetplan's scripts/install-deps does it).",
              file=sys.stderr)
        return 2
    try:
        backend = detect_backend(torch, args.backend)
        step_model = load_step_model(args, backend.name)
    except ProbeError as exc:
        print(f"hetplan-probe: error: {exc}", file=sys.stderr)
        return 2
    host = host_info(backend)
    log(f"backend {host['backend']} ({host['device']}, {host['devices']} device(s), "
        f"{host['runtime']['name']} {host['runtime']['version']}), torch {host['torch']}, "
        f"{host['threads']} threads, {'quick' if args.quick else 'full'} run, seed {args.seed}")
    probe = Probe(torch, backend, args, step_model)
    probe.run()
    b = probe.bundle
    bundle = {
        "schema": SCHEMA,
        "probe": {"version": PROBE_VERSION, "started": started,
                  "seconds": positive(time.perf_counter() - wall), "quick": bool(args.quick),
                  "seed": int(args.seed)},
        "host": host,
        "dtypes": b["dtypes"],
        "gemm": b["gemm"],
        "memory": b["memory"],
        "attention": b["attention"],
        "elementwise": b["elementwise"],
        "layer": b["layer"],
        "step": b["step"],
        "operators": b["operators"],
        "collectives": b["collectives"],
        "skipped": probe.skipped,
    }
    write_atomically(args.out, bundle)
    counts = ", ".join(f"{k} {len(bundle[k])}" for k in ("gemm", "memory", "attention",
                                                          "elementwise", "layer", "step",
                                                          "operators", "collectives", "skipped"))
    log(f"wrote {args.out} in {bundle['probe']['seconds']:.1f} s: {counts}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
