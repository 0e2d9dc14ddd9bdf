#!/usr/bin/env python3
"""hetplan ladder evidence: collectives, checkpoint round trip, one cross-chip pipeline boundary,
the gradient exchange between replicas on two chip types.

A plan is trusted only after it has climbed a validation ladder: (1) single-card forward and
backward and operator coverage (hetplan_probe.py), (2) same-vendor collectives and checkpoint
save/restore, (3) ONE cross-chip pipeline boundary whose outputs and key gradients match a
reference, (4) scale. This file checks rungs 2 and 3 and writes one JSON evidence file
(schema hetplan/ladder-evidence/v1, docs/formats/calibration-bundle.md of the hetplan
repository, section "Ladder evidence"). Copy it next to hetplan_probe.py (it imports it) and run:

    python3 hetplan_boundary.py --check collectives --out EVIDENCE.json [--backend B] [--ranks N]
    python3 hetplan_boundary.py --check checkpoint  --out EVIDENCE.json [--backend B]
    python3 hetplan_boundary.py --check boundary    --out EVIDENCE.json \\
        [--first-backend B1] [--second-backend B2] [--split K] [--inject-error E]
    python3 hetplan_boundary.py --check gradient-exchange --out EVIDENCE.json \\
        [--first-backend B1] [--second-backend B2] [--equal-weights]
    # the boundary (or the exchange) across two nodes: the same command on both, plus
    #     --init tcp://HOST0:PORT --world 2 --rank 0   (on the node of the first stage)
    #     --init tcp://HOST0:PORT --world 2 --rank 1   (on the node of the second stage)

Common options: --dtype fp32|bf16|fp16, --tolerance T, --seed S, --model-json FILE, --timeout S.
Exit status: 0 when the check ran, passed or not (the JSON's "passed" says which); 1 when it
could not run to the end (an evidence file with "passed": false and the error in "notes" is
still written); 2 for a usage error, a backend that is not available, or no torch.
"""

import argparse
import copy
import datetime
import json
import math
import os
import shutil
import socket
import sys
import tempfile
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hetplan_probe as probe  # noqa: E402  (the probe's backends, model and atomic writer)

SCHEMA = "hetplan/ladder-evidence/v1"
CHECKS = ("collectives", "checkpoint", "boundary", "gradient-exchange")
DEFAULT_TOLERANCE = {"fp32": 1e-4, "bf16": 2e-2, "fp16": 2e-2}
# Sizes (elements) of the collective checks: an odd small one, one that is not a power of two,
# 1 MiB of fp32; accelerators add 64 MiB.
COLLECTIVE_SIZES_CPU = (1, 1000, 1 << 18)
COLLECTIVE_SIZES_DEVICE = (1, 1000, 1 << 18, 1 << 24)

_START = time.perf_counter()


def log(message):
    print(f"[hetplan-boundary {time.perf_counter() - _START:6.1f}s] {message}", file=sys.stderr,
          flush=True)


class CheckError(Exception):
    """The check cannot start (bad arguments, backend not available): exit 2."""


def utc_now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def tolerance_of(args):
    return float(args.tolerance) if args.tolerance is not None else DEFAULT_TOLERANCE[args.dtype]


# --------------------------------------------------------------------------------------------
# Backends


def open_backend(torch, name, index=0):
    """The probe's Backend for `name` (vendor plug-in imported, availability checked), moved to
    device `index` of that type."""
    try:
        backend = probe.detect_backend(torch, name)
    except probe.ProbeError as exc:
        raise CheckError(str(exc))
    if backend.module is not None:
        count = backend.device_count()
        if index >= count:
            raise CheckError(f"{name}:{index} was asked for but there are {count} {name} devices")
        backend.module.set_device(index)
        backend.device = torch.device(f"{name}:{index}")
    return backend


def describe_backend(backend):
    """{"backend", "device", "runtime"} as the probe reports them."""
    if backend.module is None:
        device = probe.cpu_model()
    else:
        try:
            device = str(backend.module.get_device_name(backend.device.index or 0))
        except Exception as exc:
            device = f"unknown {backend.name} device ({probe.first_line(exc)})"
    return {"backend": backend.name, "device": device,
            "runtime": probe.runtime_info(backend, device)}


def host_of(torch):
    return {"hostname": socket.gethostname(), "torch": str(torch.__version__)}


# --------------------------------------------------------------------------------------------
# Comparison


def compare(torch, what, got, ref, tolerance):
    """One result entry: max |got - ref| and that divided by max |ref| (the relative max error
    of the tensor as a whole; element-wise ratios are meaningless where ref is near zero)."""
    a = got.detach().to("cpu", torch.float64)
    b = ref.detach().to("cpu", torch.float64)
    if a.shape != b.shape:
        raise RuntimeError(f"{what}: shape {tuple(a.shape)} differs from the reference's "
                           f"{tuple(b.shape)}")
    same = (a == b) | (torch.isnan(a) & torch.isnan(b))
    diff = torch.where(same, torch.zeros_like(a), (a - b).abs())
    finite = bool(torch.isfinite(diff).all().item())
    if not finite:  # JSON has no inf or NaN: the largest double, and passed is false
        abs_err = rel_err = sys.float_info.max
    else:
        abs_err = float(diff.max().item()) if diff.numel() else 0.0
        scale = float(b[torch.isfinite(b)].abs().max().item()) if b.numel() else 0.0
        rel_err = abs_err / scale if scale > 0 else (0.0 if abs_err == 0 else sys.float_info.max)
    entry = {"what": what, "max_abs_error": abs_err, "max_rel_error": rel_err,
             "tolerance": float(tolerance), "passed": finite and rel_err <= tolerance}
    log(f"{'PASS' if entry['passed'] else 'FAIL'} {what}: max abs {abs_err:.3g}, "
        f"max rel {rel_err:.3g} (tolerance {tolerance:g})")
    return entry


def merge_entries(what, entries, tolerance):
    """One entry for several tensors: the largest errors; passed when every tensor passed."""
    return {"what": what,
            "max_abs_error": max((e["max_abs_error"] for e in entries), default=0.0),
            "max_rel_error": max((e["max_rel_error"] for e in entries), default=0.0),
            "tolerance": float(tolerance), "passed": all(e["passed"] for e in entries)}


# --------------------------------------------------------------------------------------------
# Evidence document


def evidence(check, started, host, backends, dtype, results, notes, error=None):
    notes = list(notes)
    if error is not None:
        notes.append(f"error: the check could not run to the end: {error}")
    return {"schema": SCHEMA, "check": check, "started": started, "host": host,
            "backends": backends, "dtype": dtype,
            "passed": error is None and bool(results) and all(r["passed"] for r in results),
            "results": results, "notes": notes}


def write_evidence(path, document):
    probe.write_atomically(path, document)
    failed = sum(1 for r in document["results"] if not r["passed"])
    log(f"wrote {path}: {document['check']} {'PASSED' if document['passed'] else 'FAILED'} "
        f"({len(document['results'])} results, {failed} failed)")


# --------------------------------------------------------------------------------------------
# Spawned ranks on this node (as the probe does: torch.multiprocessing spawn, file:// rendezvous)


def _spawned(rank, worker, init, workdir, *extra_args):
    """A spawned rank: runs the worker; on an exception, first records it with the time, so that
    the parent can report the rank that failed first (the root cause) rather than its peers'
    "connection closed" that follows."""
    try:
        worker(rank, init, workdir, *extra_args)
    except BaseException as exc:
        try:
            path = os.path.join(workdir, f"error{rank}.json")
            with open(path + ".tmp", "w") as f:
                json.dump({"rank": rank, "time": time.time(), "error": probe.first_line(exc)}, f)
            os.replace(path + ".tmp", path)
        except OSError:
            pass
        raise


def _first_rank_error(workdir, world):
    errors = []
    for rank in range(world):
        try:
            with open(os.path.join(workdir, f"error{rank}.json")) as f:
                errors.append(json.load(f))
        except (OSError, ValueError):
            pass
    if not errors:
        return None
    first = min(errors, key=lambda e: e["time"])
    return f"rank {first['rank']} failed: {first['error']}"


def run_spawned(worker, world, extra_args, timeout):
    """Runs worker(rank, init, result_dir, *extra_args) in `world` spawned processes and returns
    the rank results (JSON files rank<R>.json the workers wrote)."""
    import torch.multiprocessing as mp
    workdir = tempfile.mkdtemp(prefix="hetplan-boundary-")
    init = "file://" + os.path.join(workdir, "rendezvous")
    try:
        context = mp.start_processes(_spawned, args=(worker, init, workdir) + tuple(extra_args),
                                     nprocs=world, join=False, start_method="spawn")
        deadline = time.monotonic() + timeout
        try:
            while not context.join(timeout=1):
                if time.monotonic() > deadline:
                    raise TimeoutError(f"the {world} ranks ran past {timeout} s")
        except Exception as exc:
            for process in context.processes:
                if process.is_alive():
                    process.terminate()
            for process in context.processes:
                process.join(5)
            first = _first_rank_error(workdir, world)
            if first is not None:
                raise RuntimeError(first) from exc
            # A rank's failure arrives as its whole traceback: keep the error's last line.
            lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
            if lines and not isinstance(exc, TimeoutError):
                raise RuntimeError(f"a rank failed: {lines[-1][:300]}") from exc
            raise
        results = []
        for rank in range(world):
            path = os.path.join(workdir, f"rank{rank}.json")
            if os.path.exists(path):
                with open(path) as f:
                    results.append(json.load(f))
            else:
                results.append(None)
        return results
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def write_rank_result(workdir, rank, result):
    path = os.path.join(workdir, f"rank{rank}.json")
    with open(path + ".tmp", "w") as f:
        json.dump(result, f)
    os.replace(path + ".tmp", path)


def init_group(dist, backend, init, rank, world, timeout):
    warnings.filterwarnings("ignore", message=r".*private function.*")
    dist.init_process_group(backend, init_method=init, rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=timeout))


# --------------------------------------------------------------------------------------------
# Rung 2a: collectives on one backend, checked by value


def collective_pattern(torch, elems, rank):
    """Small integers (|x| <= 8), exact in fp32, bf16 and fp16, and so are their sums over up to
    8 ranks: a correct collective gives an error of exactly 0 in any dtype."""
    index = torch.arange(elems, dtype=torch.int64)
    return ((index + 3 * rank) % 17 - 8).to(torch.float64)


def _collectives_worker(rank, init, workdir, world, backend_name, dtype_name, sizes, timeout):
    import torch
    import torch.distributed as dist
    backend = open_backend(torch, backend_name, rank if backend_name != "cpu" else 0)
    device, dt = backend.device, probe.torch_dtype(torch, dtype_name)
    init_group(dist, probe.COLLECTIVE_BACKEND[backend_name], init, rank, world, timeout)
    errors, measured = {}, {}

    def record(what, got, expected):
        diff = (got.detach().to("cpu", torch.float64) - expected).abs()
        abs_err = float(diff.max().item()) if math.isfinite(float(diff.max().item())) \
            else sys.float_info.max
        scale = float(expected.abs().max().item())
        previous = measured.get(what, (0.0, 0.0))
        rel_err = abs_err / scale if scale > 0 else (0.0 if abs_err == 0 else sys.float_info.max)
        measured[what] = (max(previous[0], abs_err), max(previous[1], rel_err))

    for elems in sizes:
        nbytes = elems * torch.tensor([], dtype=dt).element_size()
        size = f"{elems} elements ({nbytes} B)"
        mine = collective_pattern(torch, elems, rank)

        def all_reduce():
            x = mine.to(device=device, dtype=dt)
            dist.all_reduce(x)  # sum
            backend.sync()
            expected = sum(collective_pattern(torch, elems, r) for r in range(world))
            return x, expected

        def all_gather():
            x = mine.to(device=device, dtype=dt)
            parts = [torch.full((elems,), -99.0, device=device, dtype=dt) for _ in range(world)]
            dist.all_gather(parts, x)
            backend.sync()
            return torch.cat(parts), torch.cat([collective_pattern(torch, elems, r)
                                                for r in range(world)])

        def broadcast(root):
            def run():
                x = (mine if rank == root else torch.full((elems,), -99.0, dtype=torch.float64))
                x = x.to(device=device, dtype=dt)
                dist.broadcast(x, src=root)
                backend.sync()
                return x, collective_pattern(torch, elems, root)
            return run

        ops = [(f"all_reduce (sum) {dtype_name} {size}", all_reduce),
               (f"all_gather {dtype_name} {size}", all_gather),
               (f"broadcast (root 0) {dtype_name} {size}", broadcast(0)),
               (f"broadcast (root {world - 1}) {dtype_name} {size}", broadcast(world - 1))]
        for what, op in ops:
            if any(what.split(" ")[0] == e.split(" ")[0] for e in errors):
                continue  # the collective already raised at a smaller size
            try:
                got, expected = op()
                record(what, got, expected)
            except Exception as exc:
                errors[what] = probe.first_line(exc)
    write_rank_result(workdir, rank, {"measured": measured, "errors": errors,
                                      "backend": describe_backend(backend)})
    dist.destroy_process_group()


def check_collectives(torch, args):
    backend = open_backend(torch, args.backend)
    world = args.ranks
    notes = []
    if world < 2:
        raise CheckError(f"--ranks {world}: collectives need at least 2 ranks")
    if backend.name != "cpu":
        devices = backend.device_count()
        if devices < 2:
            raise CheckError(f"one {backend.name} device on this node; "
                             f"{probe.COLLECTIVE_BACKEND[backend.name]} needs one device per rank")
        if devices < world:
            notes.append(f"--ranks {world} but only {devices} {backend.name} devices: ran with "
                         f"{devices} ranks")
            world = devices
    sizes = COLLECTIVE_SIZES_CPU if backend.name == "cpu" else COLLECTIVE_SIZES_DEVICE
    coll = probe.COLLECTIVE_BACKEND[backend.name]
    backends = [describe_backend(backend)]
    tolerance = tolerance_of(args)
    notes.append(f"{world} ranks on this node, one process per rank (torch.multiprocessing "
                 f"spawn, file:// rendezvous), torch.distributed backend {coll}"
                 + ("" if backend.name == "cpu" else f", rank r on {backend.name}:r"))
    notes.append("inputs are small integers (rank-dependent), exact in every dtype, as are "
                 "their sums over up to 8 ranks: a correct collective has error 0; every rank "
                 "checks its own output and the errors are the largest over the ranks")
    log(f"collectives: {world} ranks, {coll} on {backend.name}, {args.dtype}, sizes "
        f"{', '.join(str(s) for s in sizes)} elements")
    start = time.perf_counter()
    ranks = run_spawned(_collectives_worker, world,
                        (world, backend.name, args.dtype, sizes, args.timeout), args.timeout)
    measured, errors = {}, {}
    order = []
    for result in ranks:
        if result is None:
            raise RuntimeError("a rank wrote no result")
        for what, (abs_err, rel_err) in result["measured"].items():
            if what not in measured:
                order.append(what)
            previous = measured.get(what, (0.0, 0.0))
            measured[what] = (max(previous[0], abs_err), max(previous[1], rel_err))
        for what, why in result["errors"].items():
            errors.setdefault(what, why)
    for what in errors:
        if what not in measured:
            order.append(what)
    results = []
    for what in order:
        if what in errors:  # no value to compare: the largest double, and a failure
            why = errors[what]
            results.append({"what": what, "max_abs_error": sys.float_info.max,
                            "max_rel_error": sys.float_info.max, "tolerance": tolerance,
                            "passed": False})
            notes.append(f"{what} raised on at least one rank: {why}")
            log(f"FAIL {what}: raised {why}")
            continue
        abs_err, rel_err = measured[what]
        passed = rel_err <= tolerance
        results.append({"what": what, "max_abs_error": abs_err, "max_rel_error": rel_err,
                        "tolerance": tolerance, "passed": passed})
        log(f"{'PASS' if passed else 'FAIL'} {what}: max abs {abs_err:.3g}")
    if errors:
        notes.append("a collective that raised at one size was not tried at the larger ones; "
                     "its errors are written as the largest double (1.7976931348623157e308)")
    notes.append(f"the check took {time.perf_counter() - start:.1f} s")
    return backends, results, notes


# --------------------------------------------------------------------------------------------
# Model pieces shared by the checkpoint and boundary checks


def model_config(args, backend_names):
    """The probe's training-step model (its CPU size when any stage runs on the CPU)."""
    name = "cpu" if "cpu" in backend_names else backend_names[0]
    try:
        cfg = probe.load_step_model(args, name)
    except probe.ProbeError as exc:
        raise CheckError(str(exc).replace("hetplan-probe", "hetplan-boundary"))
    cfg = {k: v for k, v in cfg.items() if k != "dtype"}  # --dtype rules
    return cfg


def kernel_of(torch):
    return "sdpa" if probe.has_sdpa(torch) else "math"


def lm_loss(torch, logits, targets, vocab):
    return torch.nn.functional.cross_entropy(logits.reshape(-1, vocab).float(),
                                             targets.reshape(-1))


def describe_model(cfg, dtype):
    return (f"model: the probe's training-step model, LLaMA-style, {cfg['layers']} layers, "
            f"hidden {cfg['hidden']}, {cfg['heads']} heads ({cfg['kv_heads']} KV), ffn "
            f"{cfg['ffn']}, vocab {cfg['vocab']}, micro-batch {cfg['micro_batch']}, seq "
            f"{cfg['seq']}, {dtype} weights and activations, loss in fp32")


# --------------------------------------------------------------------------------------------
# Rung 2b: checkpoint save and restore


def check_checkpoint(torch, args):
    backend = open_backend(torch, args.backend)
    cfg = model_config(args, [backend.name])
    dt = probe.torch_dtype(torch, args.dtype)
    device = backend.device
    tolerance = tolerance_of(args)
    _, SmallLM = probe.build_model_classes(torch)
    kernel = kernel_of(torch)
    notes = [describe_model(cfg, args.dtype),
             "AdamW (lr 1e-3, weight decay 0.01); 2 steps, torch.save of the model's and the "
             "optimizer's state_dict, a fresh model (another seed) and optimizer, torch.load "
             "(map_location cpu) and load_state_dict, then one more step of the same batch in "
             "both; 'restored' entries must be exact (tolerance 0)"]
    head_dim = cfg["hidden"] // cfg["heads"]
    cos, sin = probe.rotary_tables(torch, cfg["seq"], head_dim, dt, device)
    generator = torch.Generator().manual_seed(args.seed + 1)
    batches = [torch.randint(0, cfg["vocab"], (cfg["micro_batch"], cfg["seq"] + 1),
                             generator=generator).to(device) for _ in range(3)]

    def build(seed):
        torch.manual_seed(seed)
        model = SmallLM(cfg, kernel).to(device=device, dtype=dt)
        model.train()
        return model, torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)

    def step(model, optimizer, batch):
        loss = lm_loss(torch, model(batch[:, :-1], cos, sin), batch[:, 1:], cfg["vocab"])
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        backend.sync()
        return loss.detach()

    def params(model):
        return dict(model.named_parameters())

    def optimizer_tensors(model, optimizer):
        out = {}
        for name, p in model.named_parameters():
            for key, value in sorted(optimizer.state.get(p, {}).items()):
                if torch.is_tensor(value):
                    out[f"{name}.{key}"] = value
                else:
                    out[f"{name}.{key}"] = torch.tensor(float(value))
        return out

    def compare_all(what, got, ref, tol):
        if sorted(got) != sorted(ref):
            raise RuntimeError(f"{what}: the restored tensors' names differ from the original's")
        entries = [compare(torch, f"{what}:{name}", got[name], ref[name], tol) for name in ref]
        worst = max(entries, key=lambda e: e["max_rel_error"]) if entries else None
        merged = merge_entries(f"{what} ({len(entries)} tensors)", entries, tol)
        if worst is not None and not merged["passed"]:
            notes.append(f"{what}: worst tensor {worst['what'].split(':', 1)[1]}")
        return merged

    start = time.perf_counter()
    model, optimizer = build(args.seed)
    losses = [float(step(model, optimizer, batches[i]).item()) for i in range(2)]
    workdir = tempfile.mkdtemp(prefix="hetplan-checkpoint-")
    try:
        path = os.path.join(workdir, "checkpoint.pt")
        torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict()}, path)
        size = os.path.getsize(path)
        fresh, fresh_optimizer = build(args.seed + 7919)
        before = max(float((a.detach().float() - b.detach().float()).abs().max().item())
                     for a, b in zip(fresh.parameters(), model.parameters()))
        state = torch.load(path, map_location="cpu")
        fresh.load_state_dict(state["model"])
        fresh_optimizer.load_state_dict(state["optimizer"])
        state = None
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    notes.append(f"losses of steps 1 and 2: {losses[0]:.6f}, {losses[1]:.6f}; checkpoint "
                 f"{size} B; before loading, the fresh model's parameters differed from the "
                 f"trained ones by up to {before:.3g} (so the load is what made them equal)")
    results = [
        compare_all("restored parameters", params(fresh), params(model), 0.0),
        compare_all("restored optimizer state", optimizer_tensors(fresh, fresh_optimizer),
                    optimizer_tensors(model, optimizer), 0.0),
    ]
    loss_ref = step(model, optimizer, batches[2])
    loss_got = step(fresh, fresh_optimizer, batches[2])
    results.append(compare(torch, "step 3 loss (restored vs original)", loss_got, loss_ref,
                           tolerance))
    results.append(compare_all("step 3 parameters", params(fresh), params(model), tolerance))
    results.append(compare_all("step 3 optimizer state",
                               optimizer_tensors(fresh, fresh_optimizer),
                               optimizer_tensors(model, optimizer), tolerance))
    exact = all(r["max_abs_error"] == 0 for r in results)
    notes.append(f"bit-for-bit identical: {'yes' if exact else 'no'}; step 3 loss "
                 f"{float(loss_ref.item()):.6f}")
    notes.append(f"the check took {time.perf_counter() - start:.1f} s")
    return [describe_backend(backend)], results, notes


# --------------------------------------------------------------------------------------------
# Rung 3: one cross-chip pipeline boundary
#
# Rank 0 runs the embedding and layers [0, K) on the first backend, rank 1 runs layers [K, L),
# the final norm, the LM head and the loss on the second. The boundary activation and, in the
# backward, its gradient move through HOST memory with torch.distributed's gloo backend:
# gloo only ever sees CPU tensors, so it works between any two vendors (Ascend, DCU, MLU,
# NVIDIA, CPU), on one node or across nodes, which no vendor collective library (HCCL, RCCL,
# CNCL, NCCL) does. Tensors are widened to fp32 for the trip; bf16 and fp16 widen exactly, so
# the transport itself adds no error.


def send_tensor(torch, dist, tensor, dst):
    t = tensor.detach().to("cpu")
    if t.is_floating_point():
        t = t.to(torch.float32)
    dist.send(t.contiguous(), dst)


def recv_tensor(torch, dist, shape, dtype, src):
    t = torch.empty(shape, dtype=dtype)
    dist.recv(t, src)
    return t


def send_json(torch, dist, obj, dst):
    data = json.dumps(obj).encode()
    dist.send(torch.tensor([len(data)], dtype=torch.int64), dst)
    dist.send(torch.tensor(list(data), dtype=torch.uint8), dst)


def recv_json(torch, dist, src):
    n = torch.empty(1, dtype=torch.int64)
    dist.recv(n, src)
    data = torch.empty(int(n.item()), dtype=torch.uint8)
    dist.recv(data, src)
    return json.loads(bytes(data.tolist()).decode())


def stage_two_names(cfg, split):
    """The parameter names of the second stage, in send order."""
    names = []
    for layer in range(split, cfg["layers"]):
        for part in ("norm1.weight", "q.weight", "k.weight", "v.weight", "o.weight",
                     "norm2.weight", "gate.weight", "up.weight", "down.weight"):
            names.append(f"layers.{layer}.{part}")
    return names + ["norm.weight", "head.weight"]


def split_of(args, cfg):
    layers = cfg["layers"]
    split = args.split if args.split is not None else layers // 2
    if not 1 <= split <= layers - 1:
        raise CheckError(f"--split {split}: each stage needs at least one of the {layers} "
                         f"layers (1 <= split <= {layers - 1})")
    return split


def open_pair_rank(rank, init, world, args, backend_index, check):
    """One rank of a two-rank check (boundary, gradient exchange): its backend (rank 0 on
    --first-backend, rank 1 on --second-backend), joined to the other over gloo, and the
    probe's model class and attention kernel."""
    import torch
    import torch.distributed as dist
    if world != 2:
        raise CheckError(f"the {check} check has exactly 2 ranks (--world 2)")
    name = args.first_backend if rank == 0 else args.second_backend
    backend = open_backend(torch, name, backend_index)
    log(f"rank {rank}: {name} ({backend.device}), joining {init}")
    # gloo for everything: see the comment above.
    init_group(dist, "gloo", init, rank, world, args.timeout)
    _, SmallLM = probe.build_model_classes(torch)
    return torch, dist, backend, SmallLM, kernel_of(torch)


def boundary_rank(rank, init, world, args, backend_index):
    """One rank of the boundary check. Rank 0 returns its part of the evidence."""
    torch, dist, backend, SmallLM, kernel = open_pair_rank(rank, init, world, args,
                                                           backend_index, "boundary")
    # The group is torn down only after success: a failing rank records its error before its
    # exit closes the connections (the peer's "connection closed" then comes later).
    if rank == 1:
        _boundary_second_stage(torch, dist, backend, SmallLM, kernel, args)
        dist.destroy_process_group()
        return None
    part = _boundary_first_stage(torch, dist, backend, SmallLM, kernel, args)
    dist.destroy_process_group()
    return part


def _boundary_first_stage(torch, dist, backend, SmallLM, kernel, args):
    cfg = model_config(args, [args.first_backend, args.second_backend])
    layers = cfg["layers"]
    split = split_of(args, cfg)
    dt = probe.torch_dtype(torch, args.dtype)
    device = backend.device
    tolerance = tolerance_of(args)
    spec = {"cfg": cfg, "dtype": args.dtype, "split": split, "inject_error": args.inject_error,
            "seed": args.seed, "second_backend": args.second_backend}
    send_json(torch, dist, spec, 1)
    peer = recv_json(torch, dist, 1)  # the second stage's backend and host

    # The weights: one master copy, built on the CPU in fp32 from the seed; the second stage
    # receives its share from here, so both stages hold exactly the reference's weights even
    # when the two nodes run different torch builds.
    torch.manual_seed(args.seed)
    master = SmallLM(cfg, kernel)
    master_params = dict(master.named_parameters())
    for pname in stage_two_names(cfg, split):
        send_tensor(torch, dist, master_params[pname], 1)
    generator = torch.Generator().manual_seed(args.seed + 1)
    data = torch.randint(0, cfg["vocab"], (cfg["micro_batch"], cfg["seq"] + 1),
                         generator=generator)
    tokens, targets = data[:, :-1], data[:, 1:]
    send_tensor(torch, dist, targets.contiguous(), 1)

    head_dim = cfg["hidden"] // cfg["heads"]
    cos, sin = probe.rotary_tables(torch, cfg["seq"], head_dim, dt, device)
    tokens_dev = tokens.to(device)

    # The pipeline: stage 1 forward, send; receive the activation gradient, stage 1 backward.
    embed = copy.deepcopy(master.embed).to(device=device, dtype=dt)
    first_layers = copy.deepcopy(master.layers[:split]).to(device=device, dtype=dt)
    start = time.perf_counter()
    x = embed(tokens_dev)
    for layer in first_layers:
        x = layer(x, cos, sin)
    backend.sync()
    send_tensor(torch, dist, x, 1)
    act_shape = (cfg["micro_batch"], cfg["seq"], cfg["hidden"])
    grad_in = recv_tensor(torch, dist, act_shape, torch.float32, 1)
    x.backward(grad_in.to(device=device, dtype=dt))
    backend.sync()
    pipeline_seconds = time.perf_counter() - start
    loss_pipe = recv_tensor(torch, dist, (), torch.float32, 1)
    act_pipe = recv_tensor(torch, dist, act_shape, torch.float32, 1)
    last = layers - 1
    grads_two = {f"layers.{last}.down.weight": None, "head.weight": None}
    for pname in grads_two:
        grads_two[pname] = recv_tensor(torch, dist, tuple(master_params[pname].shape),
                                       torch.float32, 1)
    stage_two_seconds = float(recv_tensor(torch, dist, (), torch.float64, 1).item())
    grads_pipe = {"embed.weight": embed.weight.grad,
                  "layers.0.q.weight": first_layers[0].q.weight.grad}
    grads_pipe.update(grads_two)

    # The reference: the whole model with the same weights, in one process, on the first
    # backend; the boundary activation is the output of layer split-1.
    reference = copy.deepcopy(master).to(device=device, dtype=dt)
    start = time.perf_counter()
    y = reference.embed(tokens_dev)
    for index, layer in enumerate(reference.layers):
        y = layer(y, cos, sin)
        if index == split - 1:
            act_ref = y
            act_ref.retain_grad()
    loss_ref = lm_loss(torch, reference.head(reference.norm(y)), targets.to(device),
                       cfg["vocab"])
    loss_ref.backward()
    backend.sync()
    reference_seconds = time.perf_counter() - start
    ref_params = dict(reference.named_parameters())

    boundary = f"output of layers.{split - 1} (stage 1 -> stage 2)"
    results = [
        compare(torch, "loss", loss_pipe, loss_ref, tolerance),
        compare(torch, f"boundary activation: {boundary}, as stage 2 received it", act_pipe,
                act_ref, tolerance),
        compare(torch, f"boundary activation gradient: d loss / d {boundary}, as stage 1 "
                f"received it", grad_in, act_ref.grad, tolerance),
    ]
    for pname in ("layers.0.q.weight", f"layers.{last}.down.weight", "embed.weight",
                  "head.weight"):
        results.append(compare(torch, f"gradient of {pname}", grads_pipe[pname],
                               ref_params[pname].grad, tolerance))
    notes = [
        describe_model(cfg, args.dtype),
        f"stage 1 (rank 0, {backend.name} {device}): embedding and layers 0..{split - 1}; "
        f"stage 2 (rank 1, {peer['backend']['backend']} {peer['device']}): layers "
        f"{split}..{last}, final RMSNorm, LM head and cross-entropy",
        "the boundary activation and its gradient crossed through host memory with "
        "torch.distributed gloo send/recv (widened to fp32 for the trip, which is exact)",
        f"reference: the same weights (one master copy from seed {args.seed}, the second "
        f"stage's share sent to it) as one model in one process on {backend.name} {device}",
        "max_rel_error = max |pipeline - reference| / max |reference|, per tensor",
        f"loss: pipeline {float(loss_pipe.item()):.6f}, reference {float(loss_ref.item()):.6f}",
        f"stage 2 host {peer['host']['hostname']}, torch {peer['host']['torch']}",
        f"times: pipeline forward+backward {pipeline_seconds:.2f} s (stage 2 "
        f"{stage_two_seconds:.2f} s of it), reference forward+backward "
        f"{reference_seconds:.2f} s",
    ]
    if peer["backend"]["backend"] != args.second_backend:
        notes.append(f"rank 1 ran on {peer['backend']['backend']} (its own --second-backend), "
                     f"not on rank 0's --second-backend {args.second_backend}")
    if args.inject_error:
        notes.append(f"NEGATIVE CONTROL: --inject-error {args.inject_error:g} perturbed the "
                     "boundary activation on rank 1 (noise of max magnitude "
                     f"{args.inject_error:g} x max |activation|): the check is expected to fail")
    return [describe_backend(backend), peer["backend"]], results, notes


def _boundary_second_stage(torch, dist, backend, SmallLM, kernel, args):
    spec = recv_json(torch, dist, 0)  # rank 0's options rule the run
    send_json(torch, dist, {"backend": describe_backend(backend), "host": host_of(torch),
                            "device": str(backend.device)}, 0)
    cfg, split = spec["cfg"], spec["split"]
    dt = probe.torch_dtype(torch, spec["dtype"])
    device = backend.device
    torch.manual_seed(spec["seed"] + 1000003)  # a skeleton: its weights are overwritten
    model = SmallLM(cfg, kernel)
    params = dict(model.named_parameters())
    with torch.no_grad():
        for pname in stage_two_names(cfg, split):
            params[pname].copy_(recv_tensor(torch, dist, tuple(params[pname].shape),
                                            torch.float32, 0))
    targets = recv_tensor(torch, dist, (cfg["micro_batch"], cfg["seq"]), torch.int64, 0)
    layers = model.layers[split:].to(device=device, dtype=dt)
    norm = model.norm.to(device=device, dtype=dt)
    head = model.head.to(device=device, dtype=dt)
    head_dim = cfg["hidden"] // cfg["heads"]
    cos, sin = probe.rotary_tables(torch, cfg["seq"], head_dim, dt, device)
    targets = targets.to(device)

    act_shape = (cfg["micro_batch"], cfg["seq"], cfg["hidden"])
    received = recv_tensor(torch, dist, act_shape, torch.float32, 0)
    start = time.perf_counter()
    if spec["inject_error"]:
        # The negative control: noise of max magnitude inject_error x max |activation|.
        noise = torch.randn(act_shape, generator=torch.Generator().manual_seed(12345))
        noise /= noise.abs().max()
        received = received + spec["inject_error"] * received.abs().max() * noise
    x = received.to(device=device, dtype=dt).requires_grad_(True)
    y = x
    for layer in layers:
        y = layer(y, cos, sin)
    loss = lm_loss(torch, head(norm(y)), targets, cfg["vocab"])
    loss.backward()
    backend.sync()
    seconds = time.perf_counter() - start
    send_tensor(torch, dist, x.grad, 0)
    send_tensor(torch, dist, loss, 0)
    send_tensor(torch, dist, x, 0)  # the activation as this stage used it
    send_tensor(torch, dist, layers[-1].down.weight.grad, 0)
    send_tensor(torch, dist, head.weight.grad, 0)
    dist.send(torch.tensor(seconds, dtype=torch.float64), 0)


def _pair_worker(rank, init, workdir, args, indices, rank_function):
    part = rank_function(rank, init, 2, args, indices[rank])
    if rank == 0:
        write_rank_result(workdir, 0, {"backends": part[0], "results": part[1],
                                       "notes": part[2]})


def boundary_indices(torch, args):
    """Device indices on this node: the second stage takes device 1 when both stages use the
    same accelerator type and there are two."""
    if args.first_backend == args.second_backend and args.first_backend != "cpu":
        backend = open_backend(torch, args.first_backend)
        return (0, 1 if backend.device_count() >= 2 else 0)
    return (0, 0)


def run_pair_check(torch, args, rank_function):
    """A two-rank check: this process is one rank of a run started by the user (--init, two
    nodes or two shells), or both ranks are spawned on this node."""
    start = time.perf_counter()
    if args.init:
        part = rank_function(args.rank, args.init, args.world, args, 0)
        if part is None:
            return None
        backends, results, notes = part
    else:
        for name in (args.first_backend, args.second_backend):
            open_backend(torch, name)  # fail early, in this process, when one is missing
        indices = boundary_indices(torch, args)
        ranks = run_spawned(_pair_worker, 2, (args, indices, rank_function), args.timeout)
        if ranks[0] is None:
            raise RuntimeError("rank 0 wrote no result")
        backends, results, notes = ranks[0]["backends"], ranks[0]["results"], ranks[0]["notes"]
        notes = notes + ["the 2 ranks ran on this node (torch.multiprocessing spawn, file:// "
                         "rendezvous)"]
    notes.append(f"the check took {time.perf_counter() - start:.1f} s")
    return backends, results, notes


def check_boundary(torch, args):
    if not args.init or args.rank == 0:  # rank 0's options rule: check them before starting
        cfg = model_config(args, [args.first_backend, args.second_backend])
        split_of(args, cfg)
    return run_pair_check(torch, args, boundary_rank)


# --------------------------------------------------------------------------------------------
# The gradient exchange between replicas on two chip types (data parallelism across chip
# types): each replica runs its own, uneven share of one batch, scales its gradient by its
# samples over the batch, and the two sum them through host memory (gloo). The sum must be the
# whole batch's gradient (docs/models/mixed-data-parallel.md of the hetplan repository).

# The batch's sequences and the first replica's share of them: uneven, so that weighting the
# replicas alike instead of by their samples gives another gradient.
EXCHANGE_BATCH = 3
EXCHANGE_FIRST_SHARE = 2
EXCHANGE_KEY_PARAMETERS = ("embed.weight", "layers.0.q.weight", "norm.weight", "head.weight")


def exchange_rank(rank, init, world, args, backend_index):
    """One replica of the gradient-exchange check. Rank 0 returns its part of the evidence."""
    torch, dist, backend, SmallLM, kernel = open_pair_rank(rank, init, world, args,
                                                           backend_index, "gradient-exchange")
    part = _exchange_replica(torch, dist, rank, backend, SmallLM, kernel, args)
    dist.destroy_process_group()
    return part


def _exchange_replica(torch, dist, rank, backend, SmallLM, kernel, args):
    if rank == 0:
        cfg = model_config(args, [args.first_backend, args.second_backend])
        spec = {"cfg": cfg, "dtype": args.dtype, "seed": args.seed,
                "equal_weights": args.equal_weights}
        send_json(torch, dist, spec, 1)
        peer = recv_json(torch, dist, 1)
    else:
        spec = recv_json(torch, dist, 0)  # rank 0's options rule the run
        send_json(torch, dist, {"backend": describe_backend(backend), "host": host_of(torch),
                                "device": str(backend.device)}, 0)
        cfg = spec["cfg"]
    dt = probe.torch_dtype(torch, spec["dtype"])
    device = backend.device
    # One master copy of the weights and one batch, made on rank 0 from the seed and sent, so
    # that both replicas hold exactly the reference's even with different torch builds.
    torch.manual_seed(spec["seed"] + (0 if rank == 0 else 1000003))
    master = SmallLM(cfg, kernel)
    params = dict(master.named_parameters())
    shape = (EXCHANGE_BATCH, cfg["seq"] + 1)
    if rank == 0:
        for tensor in params.values():
            send_tensor(torch, dist, tensor, 1)
        data = torch.randint(0, cfg["vocab"], shape,
                             generator=torch.Generator().manual_seed(spec["seed"] + 1))
        send_tensor(torch, dist, data, 1)
    else:
        with torch.no_grad():
            for pname, tensor in params.items():
                tensor.copy_(recv_tensor(torch, dist, tuple(tensor.shape), torch.float32, 0))
        data = recv_tensor(torch, dist, shape, torch.int64, 0)
    mine = slice(0, EXCHANGE_FIRST_SHARE) if rank == 0 else slice(EXCHANGE_FIRST_SHARE, None)
    samples = EXCHANGE_FIRST_SHARE if rank == 0 else EXCHANGE_BATCH - EXCHANGE_FIRST_SHARE
    weight = 0.5 if spec["equal_weights"] else samples / EXCHANGE_BATCH

    head_dim = cfg["hidden"] // cfg["heads"]
    cos, sin = probe.rotary_tables(torch, cfg["seq"], head_dim, dt, device)

    def gradients(model, rows):
        """The mean loss over `rows` of the batch and the gradients of every parameter."""
        tokens = data[rows, :-1].to(device)
        targets = data[rows, 1:].to(device)
        x = model.embed(tokens)
        for layer in model.layers:
            x = layer(x, cos, sin)
        loss = lm_loss(torch, model.head(model.norm(x)), targets, cfg["vocab"])
        loss.backward()
        backend.sync()
        return loss, {n: p.grad for n, p in model.named_parameters()}

    # This replica's mean gradient over its own samples, weighted, summed with the other's
    # through host memory in fp32.
    replica = copy.deepcopy(master).to(device=device, dtype=dt)
    start = time.perf_counter()
    _, local = gradients(replica, mine)
    exchanged = {}
    for pname in params:
        host = local[pname].detach().to("cpu", torch.float32) * weight
        dist.all_reduce(host, op=dist.ReduceOp.SUM)
        exchanged[pname] = host
    seconds = time.perf_counter() - start
    if rank == 1:
        return None

    # The reference: the whole batch's mean gradient, one model in one process.
    reference = copy.deepcopy(master).to(device=device, dtype=dt)
    loss_ref, ref = gradients(reference, slice(0, EXCHANGE_BATCH))
    tolerance = tolerance_of(args)
    results = [compare(torch, f"gradient of {pname}, exchanged between the replicas",
                       exchanged[pname], ref[pname], tolerance)
               for pname in EXCHANGE_KEY_PARAMETERS]
    notes = [
        describe_model(cfg, spec["dtype"]),
        f"replica 0 (rank 0, {backend.name} {device}): sequences 0..{EXCHANGE_FIRST_SHARE - 1} "
        f"of a batch of {EXCHANGE_BATCH}; replica 1 (rank 1, {peer['backend']['backend']} "
        f"{peer['device']}): sequences {EXCHANGE_FIRST_SHARE}..{EXCHANGE_BATCH - 1}",
        "each replica's gradient is the mean over its own sequences, scaled by "
        + ("1/2 (replicas alike)" if spec["equal_weights"] else
           "its sequences over the batch's (sample-weighted)")
        + ", and the two are summed through host memory with torch.distributed gloo "
          "all_reduce in fp32",
        f"reference: the whole batch's mean gradient, the same weights (one master copy from "
        f"seed {spec['seed']}) as one model in one process on {backend.name} {device}; loss "
        f"{float(loss_ref.item()):.6f}",
        "max_rel_error = max |exchanged - reference| / max |reference|, per tensor",
        f"replica 1 host {peer['host']['hostname']}, torch {peer['host']['torch']}",
        f"times: replica 0 forward, backward and exchange {seconds:.2f} s",
    ]
    if spec["equal_weights"]:
        notes.append("NEGATIVE CONTROL: --equal-weights scales both replicas by 1/2 although "
                     f"they ran {EXCHANGE_FIRST_SHARE} and "
                     f"{EXCHANGE_BATCH - EXCHANGE_FIRST_SHARE} sequences: the check is "
                     "expected to fail")
    return [describe_backend(backend), peer["backend"]], results, notes


def check_gradient_exchange(torch, args):
    if not args.init or args.rank == 0:  # rank 0's options rule: check them before starting
        model_config(args, [args.first_backend, args.second_backend])
    return run_pair_check(torch, args, exchange_rank)


# --------------------------------------------------------------------------------------------
# Command line


def parse_args(argv):
    parser = argparse.ArgumentParser(
        description="hetplan ladder evidence: checks same-vendor collectives, a checkpoint "
                    "round trip, or one cross-chip pipeline boundary against a reference, and "
                    "writes one JSON evidence file (hetplan/ladder-evidence/v1).")
    parser.add_argument("--check", required=True, choices=CHECKS)
    parser.add_argument("--out", help="the evidence file to write (JSON); required except on "
                        "rank 1 of a --init run")
    parser.add_argument("--backend", default="auto", choices=("auto",) + probe.BACKENDS,
                        help="collectives and checkpoint: the backend (default auto, as the "
                             "probe: npu, mlu, cuda, else cpu)")
    parser.add_argument("--first-backend", default="cpu", choices=probe.BACKENDS,
                        help="boundary: the first stage's backend (default cpu)")
    parser.add_argument("--second-backend", default="cpu", choices=probe.BACKENDS,
                        help="boundary: the second stage's backend (default cpu)")
    parser.add_argument("--dtype", default="fp32", choices=("fp32", "bf16", "fp16"))
    parser.add_argument("--tolerance", type=float,
                        help="largest relative max error that passes (default 1e-4 for fp32, "
                             "2e-2 for bf16 and fp16)")
    parser.add_argument("--ranks", type=int, default=2,
                        help="collectives: processes on this node (default 2)")
    parser.add_argument("--split", type=int,
                        help="boundary: the first layer of the second stage (default layers/2)")
    parser.add_argument("--inject-error", type=float, default=0.0, metavar="E",
                        help="boundary negative control: perturb the boundary activation on "
                             "rank 1 by up to E x its max magnitude, so that the check fails")
    parser.add_argument("--equal-weights", action="store_true",
                        help="gradient-exchange negative control: scale both replicas' "
                             "gradients by 1/2 instead of by their samples, so that the check "
                             "fails")
    parser.add_argument("--init", help="boundary, gradient-exchange: a torch.distributed init "
                        "method shared by the "
                        "two ranks started by hand, e.g. tcp://HOST:PORT; without it both "
                        "ranks are spawned on this node")
    parser.add_argument("--rank", type=int, help="with --init: this process's rank, 0 or 1")
    parser.add_argument("--world", type=int, default=2, help="with --init: 2")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--model-json", help="JSON object overriding the model, as the probe's "
                        "--model-json (its dtype key is ignored: --dtype rules)")
    parser.add_argument("--timeout", type=int, default=300,
                        help="seconds the ranks may take (default 300)")
    args = parser.parse_args(argv)
    if args.tolerance is not None and not (args.tolerance >= 0 and math.isfinite(args.tolerance)):
        parser.error("--tolerance: expected a finite number >= 0")
    if not math.isfinite(args.inject_error) or args.inject_error < 0:
        parser.error("--inject-error: expected a finite number >= 0")
    if args.inject_error and args.check != "boundary":
        parser.error("--inject-error is for --check boundary")
    if args.seed < 0:
        parser.error("--seed: expected a non-negative integer")
    if args.timeout < 1:
        parser.error("--timeout: expected a positive number of seconds")
    if args.equal_weights and args.check != "gradient-exchange":
        parser.error("--equal-weights is for --check gradient-exchange")
    if args.init:
        if args.check not in ("boundary", "gradient-exchange"):
            parser.error("--init is for --check boundary or gradient-exchange (collectives and "
                         "checkpoint run on this node)")
        if args.world != 2 or args.rank not in (0, 1):
            parser.error("--init needs --world 2 and --rank 0 or 1")
    elif args.rank is not None:
        parser.error("--rank needs --init")
    if not args.out and not (args.init and args.rank == 1):
        parser.error("--out is required")
    return args


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    started = utc_now()
    try:
        import torch
    except Exception as exc:
        print(f"hetplan-boundary: error: cannot import torch with {sys.executable}: "
              f"{probe.first_line(exc)}. Install PyTorch for this Python (on Debian: "
              "apt-get install python3-torch).", file=sys.stderr)
        return 2
    host = host_of(torch)
    check = {"collectives": check_collectives, "checkpoint": check_checkpoint,
             "boundary": check_boundary, "gradient-exchange": check_gradient_exchange}[args.check]
    log(f"check {args.check}, {args.dtype}, torch {host['torch']} on {host['hostname']}")
    backends, results, notes, error = [], [], [], None
    try:
        outcome = check(torch, args)
        if outcome is None:  # rank 1 of a --init boundary run: rank 0 writes the evidence
            log("rank 1 done; rank 0 writes the evidence")
            return 0
        backends, results, notes = outcome
    except CheckError as exc:
        print(f"hetplan-boundary: error: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:
        error = probe.first_line(exc)
        print(f"hetplan-boundary: error: the check could not run to the end: {error}",
              file=sys.stderr)
    if not backends:
        try:
            names = ([args.first_backend, args.second_backend]
                     if args.check in ("boundary", "gradient-exchange") else [args.backend])
            backends = [describe_backend(open_backend(torch, n)) for n in names]
        except Exception:
            backends = []
    document = evidence(args.check, started, host, backends, args.dtype, results, notes, error)
    if args.out:
        write_evidence(args.out, document)
    return 1 if error is not None else 0


if __name__ == "__main__":
    sys.exit(main())
