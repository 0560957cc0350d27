"""The verify and convert flows, independent of the CLI (the benchmark calls these too)."""

from __future__ import annotations

import math
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from migrate.safe_write import UnsafeOutput, make_folder
from migrate.verify import convert as conv
from migrate.verify import inputs as inp
from migrate.verify import load, recover
from migrate.verify import runners as rn
from migrate.verify.branch_check import (
    BranchCheck,
    eager_for_archive,
    export_hint,
    run_branch_check,
)
from migrate.verify.compare import LeafResult, Tolerance, compare_outputs, json_float
from migrate.verify.errors import VerifyError, describe, one_line, quiet

SCHEMA_VERSION = 1


@dataclass
class VerifyConfig:
    target: str
    inputs: str | None = None
    input_shapes: list[str] = field(default_factory=list)
    dynamic_dims: list[str] = field(default_factory=list)
    # issue 28: each recorded call's tensor shapes; compared on instead of min/middle/max
    recorded_shapes: list[list[list[int]]] | None = None
    device: str = "auto"
    samples: int = 3
    seed: int = 0
    rtol: float | None = None
    atol: float | None = None
    candidates: list[str] = field(default_factory=list)
    default_candidates: bool | None = None  # None: on unless --candidate is given
    original: str | None = None
    backend: str = "xnnpack"
    out: Path | None = None
    # The chosen output folder `out` must stay inside (a batch's --out; default: `out`).
    out_root: Path | None = None
    bench: bool = False
    bench_runs: int = 10  # at least this many timed calls per runtime
    bench_min_time: float = 0.2  # and at least this much measured time
    threads: int | None = None  # --threads: torch and ExecuTorch threads while timing
    debug: bool = False
    branches: bool = False  # --branches: cover both sides of data-dependent conditions
    config_path: str | None = None  # the pyproject.toml the defaults came from
    from_config: list[str] = field(default_factory=list)  # settings taken from it
    trust_archive: bool = False  # --trust-archive: load without the audit
    max_input_bytes: int | None = None  # None: a quarter of physical memory
    method: str | None = None  # --method: check this method of the archive only

    @property
    def root(self) -> Path | None:
        """The folder every artifact stays in (None: a temp folder of its own)."""
        return self.out_root or self.out

    def settings(self) -> dict[str, Any]:
        return {
            "device": self.device,
            "samples": self.samples,
            "seed": self.seed,
            "rtol": self.rtol,
            "atol": self.atol,
            "config": self.config_path,
            "from_config": list(self.from_config),
        }


@dataclass
class Cell:
    """One candidate on one device, over all samples."""

    device: str
    candidate: str
    kind: str
    status: str  # pass | fail | error
    samples: int = 0
    max_abs: float = 0.0
    max_rel: float = 0.0
    worst: dict[str, Any] | None = None  # {sample, leaf, index, ...}
    leaves: list[LeafResult] = field(default_factory=list)  # leaves of the worst sample
    error: dict[str, str] | None = None  # {stage, message}
    latency_ms: float | None = None
    reference_latency_ms: float | None = None
    divergence: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)
    bench: dict[str, Any] | None = None  # median/min/p90/calls/load with --bench

    def to_json(self) -> dict[str, Any]:
        return {
            "device": self.device,
            "candidate": self.candidate,
            "kind": self.kind,
            "status": self.status,
            "samples": self.samples,
            "max_abs": json_float(self.max_abs),
            "max_rel": json_float(self.max_rel),
            "worst": self.worst,
            "leaves": [leaf.to_json() for leaf in self.leaves],
            "error": self.error,
            "latency_ms": self.latency_ms,
            "reference_latency_ms": self.reference_latency_ms,
            "bench": self.bench,
            "first_divergence": self.divergence,
            "notes": self.notes,
        }


@dataclass
class Report:
    target: str
    target_kind: str
    reference: str
    devices: list[str]
    samples: list[dict[str, Any]]
    candidates: list[dict[str, Any]]
    cells: list[Cell]
    artifacts: dict[str, str]
    errors: list[dict[str, str]]
    notes: list[str]
    seed: int
    bench: bool
    elapsed_s: float = 0.0
    branches: BranchCheck | None = None
    settings: dict[str, Any] = field(default_factory=dict)
    recovery: list[dict[str, Any]] = field(default_factory=list)  # per method, archives only
    latency: dict[str, Any] | None = None  # with --bench: what was timed, threads, reference

    @property
    def exit_code(self) -> int:
        # A mismatch found is the verdict (1) even when another candidate could not be
        # built or run (a lowering that refused the differing program): that is a note.
        if any(c.status == "fail" for c in self.cells):
            return 1
        if self.branches is not None and self.branches.status == "fail":
            return 1
        if self.errors or any(c.status == "error" for c in self.cells):
            return 2
        if self.branches is not None and self.branches.status == "error":
            return 2
        return 0

    @property
    def verdict(self) -> str:
        return {0: "pass", 1: "mismatch", 2: "error"}[self.exit_code]

    def to_json(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "tool": "migrate verify",
            "target": self.target,
            "target_kind": self.target_kind,
            "reference": self.reference,
            "verdict": self.verdict,
            "exit_code": self.exit_code,
            "seed": self.seed,
            "devices": self.devices,
            "samples": self.samples,
            "candidates": self.candidates,
            "results": [c.to_json() for c in self.cells],
            "artifacts": self.artifacts,
            "errors": self.errors,
            "notes": self.notes,
            "settings": self.settings,
            "branches": None if self.branches is None else self.branches.to_json(),
            "recovery": self.recovery,
            "latency": self.latency,
            "elapsed_s": round(self.elapsed_s, 3),
        }


# --------------------------------------------------------------------------- building blocks


def _first_error(cells: list[Cell]) -> dict[str, str] | None:
    for c in cells:
        if c.error:
            return c.error
    return None


def _reference_outputs(run: rn.Runner, samples: list[inp.Sample], device: str) -> list[Any]:
    outs = []
    for s in samples:
        try:
            outs.append(run(rn.to_device(s.args, device)))
        except Exception as exc:
            stage = "inputs" if s.meta.get("kind") == "example" and device == "cpu" else "run"
            raise VerifyError(
                stage,
                f"the TorchScript reference failed on {s.name} {inp.describe_args(s.args)} "
                f"on {device}: {describe(exc)}",
            ) from exc
    return outs


def _nondeterminism(run: rn.Runner, args: tuple[Any, ...], first: Any) -> float:
    """Max abs difference between two reference runs on the same input (0.0 when stable)."""
    torch.manual_seed(12345)
    again = run(args)
    worst = 0.0
    for (_, a), (_, b) in zip(
        _flat(first),
        _flat(again),
        strict=False,
    ):
        if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.shape == b.shape:
            if a.dtype.is_floating_point:
                d = (a.double() - b.double()).abs().max().item() if a.numel() else 0.0
                worst = max(worst, d)
            elif not torch.equal(a, b):
                worst = max(worst, math.inf)
    return worst


def _flat(out: Any) -> list[tuple[str, Any]]:
    from migrate.verify.compare import flatten

    return flatten(out)


def _rank(leaf: LeafResult) -> tuple[int, float]:
    """Failing leaves outrank passing ones; then the larger absolute error."""
    err = math.inf if math.isnan(leaf.max_abs) else leaf.max_abs
    return (0 if leaf.passed else 1, err)


def run_candidate(
    cand: rn.Candidate,
    device: str,
    samples: list[inp.Sample],
    ref_outs: list[Any],
    tol: Tolerance,
) -> Cell:
    cell = Cell(device, cand.name, cand.kind, "pass", notes=list(cand.notes))
    if cand.error is not None:
        cell.status = "error"
        cell.error = {"stage": cand.error.stage, "message": cand.error.message}
        return cell
    backend = cand.backend
    if backend is None and rn.is_accelerator(device):
        backend = "accelerator"
    try:
        with quiet():
            run = cand.runner(device)
    except VerifyError as exc:
        cell.status = "error"
        cell.error = {"stage": exc.stage, "message": exc.message}
        return cell
    except Exception as exc:
        cell.status = "error"
        cell.error = {"stage": "run", "message": f"cannot prepare on {device}: {describe(exc)}"}
        return cell
    best_key: tuple[int, float] = (-1, -math.inf)
    for sample, ref_out in zip(samples, ref_outs, strict=True):
        try:
            out = run(rn.to_device(sample.args, device))
        except Exception as exc:
            if sample.meta.get("kind") == "specialisation":
                # The archive accepts this input; the program was fixed to the example's.
                cell.status = "fail"
                cell.samples += 1
                cell.max_abs = cell.max_rel = math.inf
                cell.worst = {
                    "sample": sample.name,
                    "leaf": "output",
                    "index": None,
                    "max_abs": "inf",
                    "max_rel": "inf",
                    "note": f"rejects an input the archive accepts: {describe(exc)}",
                }
                continue
            cell.status = "error"
            cell.error = {
                "stage": "run",
                "message": f"{cand.name} on {device} failed on sample {sample.name} "
                f"{inp.describe_args(sample.args)}: {describe(exc)}",
            }
            return cell
        leaves = compare_outputs(ref_out, out, tol, backend)
        cell.samples += 1
        for leaf in leaves:
            cell.max_abs = (
                max(cell.max_abs, leaf.max_abs) if not math.isnan(leaf.max_abs) else math.inf
            )
            cell.max_rel = (
                max(cell.max_rel, leaf.max_rel) if not math.isnan(leaf.max_rel) else math.inf
            )
            key = _rank(leaf)
            if key > best_key:
                best_key = key
                cell.worst = {
                    "sample": sample.name,
                    "leaf": leaf.leaf,
                    "index": leaf.worst_index,
                    "max_abs": json_float(leaf.max_abs),
                    "max_rel": json_float(leaf.max_rel),
                    "note": leaf.note,
                }
                cell.leaves = leaves
        if any(not leaf.passed for leaf in leaves):
            cell.status = "fail"
    return cell


# --------------------------------------------------------------------------- verify


def _candidate_from_spec(spec: str, cfg: VerifyConfig, ep_for_pte: Any = None) -> rn.Candidate:
    path = Path(spec)
    if load.is_callable_spec(spec):
        try:
            module, _ = load.call_model_factory(spec)
        except VerifyError as exc:
            return rn.Candidate(spec, "callable", spec, error=exc)
        cand = rn.Candidate(
            spec,
            "callable",
            spec,
            make=lambda d, m=module: rn.module_runner(m, d),
            module=module,
        )
        left = rn.training_modules(module)
        if left:
            cand.notes.append(
                f"modules in training mode: {', '.join(left[:5])} (call .eval() before export)"
            )
        return cand
    suffix = path.suffix.lower()
    if suffix == ".pt2":
        try:
            ep = load.load_pt2(path, cfg.trust_archive)
        except VerifyError as exc:
            return rn.Candidate(path.name, "pt2", spec, error=exc)
        return rn.Candidate(path.name, "pt2", spec, make=lambda d, e=ep: rn.ep_runner(e, d), ep=ep)
    if suffix == ".pte":
        try:
            load.check_pte(path)
        except VerifyError as exc:
            return rn.Candidate(path.name, "pte", spec, cpu_only=True, error=exc)
        return rn.Candidate(
            path.name,
            "pte",
            spec,
            backend=cfg.backend if cfg.backend != "xnnpack" else "xnnpack",
            cpu_only=True,
            make=lambda d, p=path: rn.pte_runner(p, cfg.debug),
        )
    if not path.exists():
        raise VerifyError(
            "usage", f"candidate {spec}: no such file (and not package.module:callable)"
        )
    raise VerifyError(
        "usage", f"candidate {spec}: expected a .pt2 or .pte file, or package.module:callable"
    )


def check_tolerances(rtol: float | None, atol: float | None) -> None:
    for name, value in (("--rtol", rtol), ("--atol", atol)):
        if value is not None and not (value >= 0 and math.isfinite(value)):
            raise VerifyError("usage", f"{name} must be a finite number >= 0, not {value}")


def archive_methods(ts: Any, example: tuple[Any, ...], method: str | None, notes: list[str]):
    """The archive's methods to convert: ``--method``'s, else forward and the exported
    methods the example fits (the others are named in a note)."""
    entries = recover.entry_methods(ts)
    if method is not None:
        try:
            known = list(ts._c._method_names())
        except Exception:  # pragma: no cover - exotic archives
            known = entries
        if method not in known or method.startswith("__"):
            raise VerifyError(
                "usage", f"the archive has no method {method!r} (methods: {', '.join(entries)})"
            )
        return [method]
    out = []
    for m in entries:
        if m == "forward":
            out.append(m)
            continue
        try:
            load.check_signature(ts, example, m)
        except VerifyError:
            notes.append(
                f"method {m} not checked: it takes other inputs than forward "
                f"(migrate convert --method {m} with its inputs)"
            )
            continue
        out.append(m)
    return out or entries[:1]


def _matches(ep: Any, samples: list[inp.Sample], ref_outs: list[Any], tol: Tolerance) -> str | None:
    """None when the program gives the archive's outputs on every sample, else why not."""
    gm = ep.module()
    for sample, ref in zip(samples, ref_outs, strict=True):
        try:
            with torch.no_grad():
                out = gm(*sample.args)
        except Exception as exc:
            return f"fails on sample {sample.name}: {describe(exc)}"
        leaves = compare_outputs(ref, out, tol, None)
        bad = [leaf for leaf in leaves if not leaf.passed]
        if bad:
            return (
                f"differs from the archive on sample {sample.name} ({bad[0].leaf}: max abs "
                f"{bad[0].max_abs:.3g})"
            )
    return None


def _specialisation_samples(
    ts: Any,
    methods: list[str],
    example: tuple[Any, ...],
    samples: list[inp.Sample],
    ref_by_method: dict[str, list[Any]],
    seed: int,
    notes: list[str],
) -> list[str]:
    """Samples that change the Python scalars the program was specialised to, where the
    archive accepts them; their reference outputs join ``ref_by_method``."""
    added = []
    for sample in inp.scalar_variations(example, seed):
        try:
            with quiet():
                outs = {m: rn.script_runner(ts, "cpu", m)(sample.args) for m in methods}
        except Exception as exc:
            notes.append(f"sample {sample.name} not used: the archive rejects it ({describe(exc)})")
            continue
        samples.append(sample)
        for m in methods:
            ref_by_method[m].append(outs[m])
        added.append(sample.name)
    return added


def _archive_candidates(
    cfg: VerifyConfig,
    target: load.Target,
    methods: list[str],
    example: tuple[Any, ...],
    dynamic_shapes: Any,
    samples: list[inp.Sample],
    ref_by_method: dict[str, list[Any]],
    tol: Tolerance,
    out_dir: Path,
    artifacts: dict[str, str],
    candidates: list[rn.Candidate],
    recovery: list[dict[str, Any]],
    notes: list[str],
    branch_check: BranchCheck | None,
) -> Any:
    """The recovery ladder per method, then the exported, .pt2 and .pte candidates.

    Returns the forward program (the reference graph for divergence search).
    """
    ts = target.reference
    recs = ladder(
        ts, methods, example, samples, ref_by_method, tol, cfg.backend, dynamic_shapes, cfg.debug,
        export_hint(branch_check),
    )  # fmt: skip
    if any(r.vary_scalars for r in recs.values()):
        added = _specialisation_samples(
            ts, methods, example, samples, ref_by_method, cfg.seed, notes
        )
        if added:
            notes.append(
                "samples that change the inputs the program was specialised to: " + ", ".join(added)
            )
    recovery.extend(r.to_json() for r in recs.values())
    buffer, lower_error = lowered_buffer(recs, cfg.backend, cfg.debug)
    pte_path = out_dir / f"{target.name}.pte"
    if buffer is not None:
        conv.save_pte(buffer, pte_path, cfg.root)
        artifacts["pte"] = str(pte_path)
    for m, rec in recs.items():
        suffix = "" if m == "forward" else f":{m}"
        stem = target.name if m == "forward" else f"{target.name}.{m}"
        ep = rec.ep
        notes_m = [f"{m}: specialised: {what}" for what in rec.specialised]
        candidates.append(
            rn.Candidate(
                f"exported{suffix}",
                "exported_program",
                f"recovery: {rec.path}" + (f" ({rec.detail})" if rec.detail else ""),
                make=lambda d, e=ep: rn.ep_runner(e, d),
                ep=ep,
                ep_source="reference",
                method=m,
                notes=notes_m,
            )
        )
        pt2_path = out_dir / f"{stem}.pt2"
        with quiet(cfg.debug):
            conv.save_pt2(ep, pt2_path, cfg.root)
            try:
                ep2 = torch.export.load(str(pt2_path))
            except Exception as exc:
                raise VerifyError(
                    "export", f"torch.export.load of {pt2_path} failed: {describe(exc)}"
                ) from exc
        artifacts["pt2" + suffix] = str(pt2_path)
        candidates.append(
            rn.Candidate(
                f"pt2{suffix}",
                "pt2",
                f"torch.export.save/load {pt2_path.name}",
                make=lambda d, e=ep2: rn.ep_runner(e, d),
                ep=ep2,
                method=m,
            )
        )
        if buffer is None:
            assert lower_error is not None
            candidates.append(
                rn.Candidate(
                    f"pte{suffix}",
                    "pte",
                    cfg.backend,
                    backend=cfg.backend,
                    cpu_only=True,
                    error=lower_error,
                    method=m,
                )
            )
            continue
        pte = rn.Candidate(
            f"pte{suffix}",
            "pte",
            f"{cfg.backend}, path: {rec.lower_path}, recovery: {rec.path}",
            backend=cfg.backend,
            cpu_only=True,
            make=lambda d, mm=m: rn.pte_runner(pte_path, cfg.debug, mm),
            ep=ep,
            ep_source="lowered-from",
            method=m,
        )
        if rec.path != recover.CONVERTER or rec.lower_path != "direct":
            pte.notes.append(
                f"recovered via {rec.path}"
                + (f" ({rec.lower_path})" if rec.lower_path != "direct" else "")
                + " after: "
                + "; ".join(f"{a.step}: {one_line(a.reason)}" for a in rec.attempts)
            )
        candidates.append(pte)
    return recs[methods[0]].ep


def ladder(
    ts: Any,
    methods: list[str],
    example: tuple[Any, ...],
    samples: list[inp.Sample],
    ref_by_method: dict[str, list[Any]],
    tol: Tolerance,
    backend: str,
    dynamic_shapes: Any,
    debug: bool,
    hint: str = "",
    archive: conv.Archive | None = None,
) -> dict[str, recover.Recovery]:
    """:func:`recover.run_ladder` for each method, checked on ``samples``; ``archive``: the
    bytes each step loads from (a snapshot of ``ts`` when not given)."""
    lower_once = (
        recover.lower_once_for(backend, methods[0]) if len(methods) == 1 else recover.edge_once
    )
    recs = {}
    base = list(samples)
    if archive is None:
        archive = conv.Archive(ts)  # each ladder step loads its own copy from this snapshot
    for m in methods:
        refs = list(ref_by_method[m])
        try:
            recs[m] = recover.run_ladder(
                ts,
                m,
                methods,
                example,
                lambda ep, r=refs: _matches(ep, base, r, tol),
                lower_once,
                dynamic_shapes,
                debug,
                archive,
            )
        except VerifyError as exc:
            if hint and not debug:
                raise recover.ladder_error(
                    exc.stage, hint + exc.message, getattr(exc, "attempts", [])
                ) from exc
            raise
        if len(methods) > 1:
            recs[m].lower_s = None  # only checked with to_edge; lowered together later
    return recs


def lowered_buffer(
    recs: dict[str, recover.Recovery], backend: str, debug: bool
) -> tuple[bytes | None, VerifyError | None]:
    """The .pte bytes: the one method's lowering, or all methods lowered together."""
    errors = [r.lower_error for r in recs.values() if r.lower_error is not None]
    if errors:
        return None, errors[0]
    if len(recs) == 1:
        return next(iter(recs.values())).buffer, None
    try:
        return conv.lower_methods({m: r.program for m, r in recs.items()}, backend, debug), None
    except VerifyError as exc:
        if debug:
            raise
        return None, exc


def _sized(cfg: VerifyConfig, dyn: list) -> int:
    """How many samples of other sizes verify adds."""
    return 3 * len(dyn) if cfg.recorded_shapes is None else len(cfg.recorded_shapes)


def run_verify(cfg: VerifyConfig) -> Report:
    t_start = time.perf_counter()
    if cfg.samples < 0:
        raise VerifyError("usage", "--samples must be >= 0")
    if cfg.original not in (None, "trace", "script"):
        raise VerifyError("usage", f"--original must be trace or script, not {cfg.original!r}")
    if cfg.backend not in conv.BACKENDS:
        raise VerifyError("usage", f"unknown backend {cfg.backend!r} (xnnpack, portable)")
    check_tolerances(cfg.rtol, cfg.atol)
    dyn = inp.parse_dynamic_dims(cfg.dynamic_dims)
    example = inp.example_from_options(
        cfg.inputs,
        cfg.input_shapes,
        cfg.seed,
        1 + cfg.samples + _sized(cfg, dyn),
        cfg.max_input_bytes,
    )
    devices = rn.resolve_devices(cfg.device)
    with quiet(cfg.debug):
        target = load.load_target(cfg.target, cfg.original, example, cfg.trust_archive)
    example = target.example if target.example is not None else example
    if example is None:
        raise VerifyError(
            "usage", f"{cfg.target} needs example inputs: pass --inputs FILE or --input-shape SPEC"
        )
    notes: list[str] = []
    methods = ["forward"]
    if target.kind == "archive":
        methods = archive_methods(target.reference, example, cfg.method, notes)
    elif cfg.method not in (None, "forward"):
        raise VerifyError("usage", "--method applies to TorchScript archives only")
    load.check_signature(target.reference, example, methods[0])
    dynamic_shapes = inp.dynamic_shapes_for(example, dyn)
    samples = list(inp.iter_samples(example, cfg.samples, cfg.seed, dyn, cfg.recorded_shapes))
    branch_check: BranchCheck | None = None
    if cfg.branches:
        # Before the reference runs: the samples found for each side join the comparison.
        if target.kind == "callable":
            eager = target.module
            ref_kind = cfg.original or "trace"
        else:
            with quiet(cfg.debug):
                eager = eager_for_archive(target.reference)
            ref_kind = "archive"
        with quiet(cfg.debug):
            branch_check, extra = run_branch_check(
                eager,
                target.reference,
                ref_kind,
                example,
                samples,
                cfg.seed,
                cfg.rtol,
                cfg.atol,
            )
        samples.extend(extra)

    out_dir = cfg.out
    tmp: tempfile.TemporaryDirectory | None = None
    if out_dir is None:
        tmp = tempfile.TemporaryDirectory(prefix="migrate-verify-")
        out_dir = Path(tmp.name)
    if cfg.root is not None:
        make_output_folder(out_dir, cfg.root)
    artifacts: dict[str, str] = {}
    errors: list[dict[str, str]] = []

    # Reference on the CPU first: bad inputs are reported before any conversion.
    ref_cpu = rn.script_runner(target.reference, "cpu", methods[0])
    ref_by_method = {
        m: _reference_outputs(rn.script_runner(target.reference, "cpu", m), samples, "cpu")
        for m in methods
    }
    ref_outs_cpu = ref_by_method[methods[0]]
    drift = _nondeterminism(ref_cpu, samples[0].args, ref_outs_cpu[0])
    if drift > 0:
        msg = (
            f"the TorchScript reference is not deterministic (two runs on the example differ by "
            f"{drift:.3g}); is the model in training mode (dropout)?"
        )
        notes.append(msg)
    if target.module is not None:
        left = rn.training_modules(target.module)
        if left:
            notes.append(f"target modules in training mode: {', '.join(left[:5])}")

    if cfg.out is not None:
        with conv.output(out_dir / "inputs.pt", cfg.root) as temp:
            torch.save(tuple(example), temp)
        artifacts["inputs"] = str(out_dir / "inputs.pt")
        if target.kind == "callable":
            ref_path = out_dir / f"{target.name}.ts.pt"
            with quiet(cfg.debug), conv.output(ref_path, cfg.root) as temp:
                torch.jit.save(target.reference, str(temp))
            artifacts["reference"] = str(ref_path)

    candidates: list[rn.Candidate] = []
    use_defaults = cfg.default_candidates
    if use_defaults is None:
        use_defaults = not cfg.candidates
    ref_graph: Any = None  # the reference's own exported graph, for divergence search
    tol = Tolerance(cfg.rtol, cfg.atol)
    recovery: list[dict[str, Any]] = []
    if use_defaults and target.kind == "archive":
        ref_graph = _archive_candidates(
            cfg, target, methods, example, dynamic_shapes, samples, ref_by_method, tol,
            out_dir, artifacts, candidates, recovery, notes, branch_check,
        )  # fmt: skip
    elif use_defaults:
        try:
            if target.kind == "archive":
                converted = conv.convert_archive(
                    target.reference, example, dynamic_shapes, cfg.debug
                )
            else:
                converted = conv.export_module(target.module, example, dynamic_shapes, cfg.debug)
        except VerifyError as exc:
            hint = export_hint(branch_check)
            if hint and not cfg.debug:
                raise VerifyError(exc.stage, hint + exc.message) from exc
            raise
        ep = converted.ep
        ref_graph = ep
        candidates.append(
            rn.Candidate(
                "exported",
                "exported_program",
                converted.path_label,
                make=lambda d: rn.ep_runner(ep, d),
                ep=ep,
                ep_source="reference" if target.kind == "archive" else "module",
            )
        )
        pt2_path = out_dir / f"{target.name}.pt2"
        with quiet(cfg.debug):
            conv.save_pt2(ep, pt2_path, cfg.root)
            try:
                ep2 = torch.export.load(str(pt2_path))
            except Exception as exc:
                raise VerifyError(
                    "export", f"torch.export.load of {pt2_path} failed: {describe(exc)}"
                ) from exc
        artifacts["pt2"] = str(pt2_path)
        candidates.append(
            rn.Candidate(
                "pt2",
                "pt2",
                f"torch.export.save/load {pt2_path.name}",
                make=lambda d: rn.ep_runner(ep2, d),
                ep=ep2,
            )
        )
        pte_path = out_dir / f"{target.name}.pte"
        try:
            lowered = conv.lower(ep, example, cfg.backend, dynamic_shapes, cfg.debug)
            conv.save_pte(lowered, pte_path, cfg.root)
            artifacts["pte"] = str(pte_path)
            pte = rn.Candidate(
                "pte",
                "pte",
                f"{cfg.backend}, path: {lowered.path}",
                backend=cfg.backend,
                cpu_only=True,
                make=lambda d: rn.pte_runner(pte_path, cfg.debug),
                ep=ep,
                ep_source="lowered-from",
            )
            if lowered.path != "direct":
                pte.notes.append(
                    f"lowered via {lowered.path} after: "
                    + "; ".join(f"{p}: {r}" for p, r in lowered.attempts)
                )
        except VerifyError as exc:
            if cfg.debug:
                raise
            pte = rn.Candidate(
                "pte", "pte", cfg.backend, backend=cfg.backend, cpu_only=True, error=exc
            )
        candidates.append(pte)
    for spec in cfg.candidates:
        candidates.append(_candidate_from_spec(spec, cfg))

    cells: list[Cell] = []
    latency: dict[str, Any] | None = None
    for device in devices:
        if device == "cpu":
            ref_run, outs_by_method = ref_cpu, ref_by_method
        else:
            with quiet(cfg.debug):
                try:
                    ref_run = rn.script_runner(target.reference, device, methods[0])
                    outs_by_method = {
                        m: _reference_outputs(
                            rn.script_runner(target.reference, device, m), samples, device
                        )
                        for m in methods
                    }
                except VerifyError:
                    raise
                except Exception as exc:
                    raise VerifyError(
                        "run", f"cannot move the TorchScript reference to {device}: {describe(exc)}"
                    ) from exc
        timed: list[tuple[rn.Candidate, Cell]] = []
        for cand in candidates:
            if cand.cpu_only and device != "cpu":
                continue
            ref_outs = outs_by_method.get(cand.method, outs_by_method[methods[0]])
            with quiet(cfg.debug):
                cell = run_candidate(cand, device, samples, ref_outs, tol)
            if cfg.bench and cell.status != "error":
                timed.append((cand, cell))
            if cell.status == "fail" and device == "cpu":
                cell.divergence = _divergence(cand, cells, target, ref_graph, samples, cell, cfg)
            cells.append(cell)
        if cfg.bench:
            from migrate.verify.bench import bench_verify

            with quiet(cfg.debug):
                latency = bench_verify(ref_run, timed, samples[0].args, device, cfg, latency)
    err = _first_error(cells)
    if err:
        errors.append(err)
    if branch_check is not None and branch_check.status == "error" and branch_check.error:
        errors.append({"stage": "branches", "message": branch_check.error})
    report = Report(
        target=cfg.target,
        target_kind=target.kind,
        reference=(
            "TorchScript archive"
            if target.kind == "archive"
            else f"torch.jit.{cfg.original or 'trace'} of {cfg.target}"
        ),
        devices=devices,
        samples=[{"name": s.name, "inputs": inp.describe_args(s.args), **s.meta} for s in samples],
        candidates=[
            {
                "name": c.name,
                "kind": c.kind,
                "source": c.source,
                "backend": c.backend,
                "devices": ["cpu"] if c.cpu_only else devices,
            }
            for c in candidates
        ],
        cells=cells,
        artifacts=artifacts,
        errors=errors,
        notes=notes,
        seed=cfg.seed,
        bench=cfg.bench,
        branches=branch_check,
        settings=cfg.settings(),
        recovery=recovery,
        latency=latency,
    )
    report.elapsed_s = time.perf_counter() - t_start
    if cfg.out is not None:
        import json

        with conv.output(out_dir / "report.json", cfg.root) as temp:
            temp.write_text(json.dumps(report.to_json(), indent=2) + "\n")
        report.artifacts["report"] = str(out_dir / "report.json")
    if tmp is not None:
        report.artifacts = {}
        tmp.cleanup()
    return report


def _divergence(
    cand: rn.Candidate,
    cells: list[Cell],
    target: load.Target,
    ref_graph: Any,
    samples: list[inp.Sample],
    cell: Cell,
    cfg: VerifyConfig,
) -> dict[str, Any] | None:
    """Where a failing candidate's graph first leaves the reference's graph (best effort)."""
    sample = next(
        (s for s in samples if cell.worst and s.name == cell.worst.get("sample")), samples[0]
    )
    if sample.meta.get("kind") == "specialisation":
        return {
            "operator": None,
            "note": f"{sample.name} changes an input the program was specialised to "
            "(see the specialised notes)",
        }
    if cand.ep_source == "lowered-from":
        ep_cell = next((c for c in cells if c.candidate == "exported" and c.device == "cpu"), None)
        if ep_cell is not None and ep_cell.status == "pass":
            return {
                "operator": None,
                "note": f"the exported program matches; the difference comes from lowering "
                f"({cand.backend})",
            }
    try:
        with quiet(cfg.debug):
            if ref_graph is None:
                if target.kind == "archive":
                    ref_graph = conv.convert_archive(target.reference, sample.args).ep
                else:
                    ref_graph = conv.export_module(target.module, sample.args).ep
            cand_graph = cand.ep
            if cand_graph is None and cand.module is not None:
                cand_graph = conv.export_module(cand.module, sample.args).ep
            if cand_graph is None:
                return None
            if cand_graph is ref_graph or cand.ep_source == "reference":
                return {
                    "operator": None,
                    "note": "the candidate is the reference's own converted graph; "
                    "no independent graph to align",
                }
            found = first_divergence_safe(ref_graph, cand_graph, sample.args)
    except Exception as exc:  # best effort: never turn a mismatch into an error
        return {"operator": None, "note": f"divergence search failed: {describe(exc)}"}
    return found


def first_divergence_safe(ref_graph: Any, cand_graph: Any, args: tuple[Any, ...]) -> Any:
    return rn.first_divergence(ref_graph, cand_graph, args)


# --------------------------------------------------------------------------- convert


@dataclass
class ConvertResult:
    pt2: dict[str, Path]  # method -> .pt2
    pte: Path | None
    recoveries: dict[str, recover.Recovery]
    backend: str
    samples: int  # samples each program was checked on
    notes: list[str] = field(default_factory=list)
    mismatch: str | None = None  # why the .pte differs from the archive (nothing written)
    together_s: float | None = None  # several methods: seconds to lower them together
    max_abs: dict[str, float] = field(default_factory=dict)  # method -> the .pte's max abs error
    timings: dict[str, float] = field(default_factory=dict)  # stage -> seconds

    def to_json(self) -> dict[str, Any]:
        return {
            "verdict": "mismatch" if self.mismatch else "pass",
            "pt2": {m: str(p) for m, p in self.pt2.items()},
            "pte": None if self.pte is None else str(self.pte),
            "backend": self.backend,
            "samples": self.samples,
            "recovery": [r.to_json() for r in self.recoveries.values()],
            "max_abs": {m: json_float(v) for m, v in self.max_abs.items()},
            "mismatch": self.mismatch,
            "notes": self.notes,
            "timings": {k: round(v, 3) for k, v in self.timings.items()},
        }

    def timing_lines(self) -> list[str]:
        total = self.timings.get("total")
        return [
            f"timing: {stage:<32} {sec:8.2f} s"
            + (f"  {100 * sec / total:3.0f}%" if total and stage != "total" else "")
            for stage, sec in self.timings.items()
        ]

    def lines(self, verbose: bool = False) -> list[str]:
        out = []
        for m, path in self.pt2.items():
            rec = self.recoveries[m]
            out.append(f"wrote {path}  (method {m}, recovery: {rec.path})")
        if self.pte is not None:
            lower = ", ".join(
                (f"{m}: " if len(self.recoveries) > 1 else "")
                + str(r.lower_path)
                + (f" in {r.lower_s:.1f} s" if r.lower_s is not None else "")
                for m, r in self.recoveries.items()
                if r.lower_path
            )
            out.append(
                f"wrote {self.pte}  (backend: {self.backend}, methods: "
                f"{', '.join(self.recoveries)}; lowering path: {lower}"
                + (f", together in {self.together_s:.1f} s" if self.together_s else "")
                + "; "
                f"checked on {self.samples} samples)"
            )
        for m, rec in self.recoveries.items():
            if rec.why:
                out.append(f"note: {m}: {rec.path}: {rec.why}")
            for what in rec.specialised:
                out.append(f"note: {m}: specialised: {what}")
            if verbose or rec.path != recover.CONVERTER or rec.lower_path != "direct":
                for a in rec.attempts:
                    why = a.reason if verbose else one_line(a.reason)
                    out.append(f"note: {m}: {a.step} failed ({a.error}): {why}")
        out += [f"note: {n}" for n in self.notes]
        return out


#: Random samples ``convert`` checks each program on, besides the example.
CONVERT_SAMPLES = 2


def run_convert(
    model: str,
    inputs: str | None,
    input_shapes: list[str],
    out: Path,
    backend: str = "xnnpack",
    dynamic_dims: list[str] | None = None,
    seed: int = 0,
    debug: bool = False,
    method: str | None = None,
    trust: bool = False,
    max_input_bytes: int | None = None,
    rtol: float | None = None,
    atol: float | None = None,
    root: Path | None = None,
) -> ConvertResult:
    """`root`: the folder the outputs must stay in (a batch's --out; default: `out`)."""
    t_start = time.perf_counter()
    timings: dict[str, float] = {}
    if backend not in conv.BACKENDS:
        raise VerifyError("usage", f"unknown backend {backend!r} (xnnpack, portable)")
    check_tolerances(rtol, atol)
    if out.exists() and not out.is_dir():
        raise VerifyError("usage", f"-o {out}: exists and is not a directory")
    dyn = inp.parse_dynamic_dims(dynamic_dims or [])
    example = inp.example_from_options(
        inputs, input_shapes, seed, 1 + CONVERT_SAMPLES + 3 * len(dyn), max_input_bytes
    )
    if example is None:
        raise VerifyError(
            "usage", "convert needs example inputs: --inputs FILE or --input-shape SPEC"
        )
    path = Path(model)
    with quiet(debug), recover._timed(timings, "load"):
        ts = load.load_archive(path, trust)
    notes: list[str] = []
    methods = archive_methods(ts, example, method, notes)
    load.check_signature(ts, example, methods[0])
    dynamic_shapes = inp.dynamic_shapes_for(example, dyn)
    samples = list(inp.iter_samples(example, CONVERT_SAMPLES, seed, dyn))
    ref_by_method: dict[str, list[Any]] = {}
    for m in methods:
        run = rn.script_runner(ts, "cpu", m)
        try:
            with quiet(debug), recover._timed(timings, "reference"):
                first = run(example)
        except Exception as exc:
            raise VerifyError(
                "inputs",
                f"the model ({m}) rejected the inputs {inp.describe_args(example)}: "
                f"{describe(exc)}",
            ) from exc
        # samples[0] is the example itself: its output is the one just computed.
        with quiet(debug), recover._timed(timings, "reference"):
            ref_by_method[m] = [first, *_reference_outputs(run, samples[1:], "cpu")]
    tol = Tolerance(rtol, atol)
    # The file's bytes serve every fresh load (no second torch.jit.save of what was loaded).
    archive = conv.Archive(ts, data=path.read_bytes())
    recs = ladder(
        ts, methods, example, samples, ref_by_method, tol, backend, dynamic_shapes, debug,
        archive=archive,
    )  # fmt: skip
    for m, rec in recs.items():
        for stage, sec in rec.timings.items():
            key = stage if len(recs) == 1 else f"{m}: {stage}"
            timings[key] = timings.get(key, 0.0) + sec
    if any(r.vary_scalars for r in recs.values()):
        with recover._timed(timings, "reference"):
            _specialisation_samples(ts, methods, example, samples, ref_by_method, seed, notes)
    start = time.perf_counter()
    with recover._timed(timings, "lower (methods together)"):
        buffer, lower_error = lowered_buffer(recs, backend, debug)
    if len(recs) == 1:
        timings.pop("lower (methods together)", None)
    if buffer is None:
        assert lower_error is not None
        raise lower_error
    result = ConvertResult({}, None, recs, backend, len(samples), notes, timings=timings)
    if len(recs) > 1:
        result.together_s = time.perf_counter() - start
    check_start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="migrate-convert-") as tmp:
        pte_tmp = Path(tmp) / "check.pte"
        pte_tmp.write_bytes(buffer)
        for m in methods:
            cand = rn.Candidate(
                "pte", "pte", backend, backend=backend, make=lambda d, mm=m: rn.pte_runner(
                    pte_tmp, debug, mm
                ),
            )  # fmt: skip
            with quiet(debug):
                cell = run_candidate(cand, "cpu", samples, ref_by_method[m], tol)
            result.max_abs[m] = cell.max_abs
            if cell.status != "pass":
                where = cell.worst or {}
                why = (
                    cell.error["message"]
                    if cell.error
                    else f"{where.get('leaf')} on sample {where.get('sample')}: max abs "
                    f"{cell.max_abs:.3g}" + (f" ({where['note']})" if where.get("note") else "")
                )
                result.mismatch = (
                    f"the .pte method {m} differs from the archive: {why}; nothing written "
                    "(migrate verify shows the details)"
                )
                break
    timings["pte check"] = time.perf_counter() - check_start
    if result.mismatch is None:
        with recover._timed(timings, "save"):
            make_output_folder(out, root or out)
            for m, rec in recs.items():
                stem = path.stem if m == "forward" else f"{path.stem}.{m}"
                with quiet(debug):
                    result.pt2[m] = conv.save_pt2(rec.ep, out / f"{stem}.pt2", root or out)
            result.pte = conv.save_pte(buffer, out / f"{path.stem}.pte", root or out)
    timings["total"] = time.perf_counter() - t_start
    return result


def make_output_folder(folder: Path, root: Path) -> None:
    """The artifacts' folder, created inside the chosen output folder only."""
    try:
        make_folder(folder, root)
    except UnsafeOutput as exc:
        raise VerifyError("output", str(exc)) from None


def convert_error_json(exc: VerifyError) -> dict[str, Any]:
    """``convert --format json`` of a failed conversion: the error and every step's full reason."""
    return {
        "verdict": "error",
        "error": {"stage": exc.stage, "message": exc.message},
        "attempts": [recover.attempt_json(a) for a in getattr(exc, "attempts", [])],
    }
