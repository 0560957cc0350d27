"""The verify and convert flows, independent of the CLI (the benchmark calls these too)."""

from __future__ import annotations

import math
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from migrate.verify import convert as conv
from migrate.verify import inputs as inp
from migrate.verify import load
from migrate.verify import runners as rn
from migrate.verify.branch_check import (
    BranchCheck,
    eager_for_archive,
    export_hint,
    run_branch_check,
)
from migrate.verify.compare import LeafResult, Tolerance, compare_outputs, json_float
from migrate.verify.errors import VerifyError, describe, quiet

SCHEMA_VERSION = 1


@dataclass
class VerifyConfig:
    target: str
    inputs: str | None = None
    input_shapes: list[str] = field(default_factory=list)
    dynamic_dims: list[str] = field(default_factory=list)
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
    bench: bool = False
    bench_runs: int = 10  # at least this many timed calls per runtime
    bench_min_time: float = 0.2  # and at least this much measured time
    threads: int | None = None  # --threads: torch and ExecuTorch threads while timing
    debug: bool = False
    branches: bool = False  # --branches: cover both sides of data-dependent conditions
    config_path: str | None = None  # the pyproject.toml the defaults came from
    from_config: list[str] = field(default_factory=list)  # settings taken from it

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
    latency: dict[str, Any] | None = None  # with --bench: what was timed, threads, reference

    @property
    def exit_code(self) -> int:
        if self.errors or any(c.status == "error" for c in self.cells):
            return 2
        if any(c.status == "fail" for c in self.cells):
            return 1
        if self.branches is not None and self.branches.status == "fail":
            return 1
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
            ep = load.load_pt2(path)
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


def run_verify(cfg: VerifyConfig) -> Report:
    t_start = time.perf_counter()
    if cfg.samples < 0:
        raise VerifyError("usage", "--samples must be >= 0")
    if cfg.original not in (None, "trace", "script"):
        raise VerifyError("usage", f"--original must be trace or script, not {cfg.original!r}")
    if cfg.backend not in conv.BACKENDS:
        raise VerifyError("usage", f"unknown backend {cfg.backend!r} (xnnpack, portable)")
    dyn = inp.parse_dynamic_dims(cfg.dynamic_dims)
    example = inp.example_from_options(cfg.inputs, cfg.input_shapes, cfg.seed)
    devices = rn.resolve_devices(cfg.device)
    with quiet(cfg.debug):
        target = load.load_target(cfg.target, cfg.original, example)
    example = target.example if target.example is not None else example
    if example is None:
        raise VerifyError(
            "usage", f"{cfg.target} needs example inputs: pass --inputs FILE or --input-shape SPEC"
        )
    load.check_signature(target.reference, example)
    dynamic_shapes = inp.dynamic_shapes_for(example, dyn)
    samples = list(inp.iter_samples(example, cfg.samples, cfg.seed, dyn))
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
    out_dir.mkdir(parents=True, exist_ok=True)
    artifacts: dict[str, str] = {}
    notes: list[str] = []
    errors: list[dict[str, str]] = []

    # Reference on the CPU first: bad inputs are reported before any conversion.
    ref_cpu = rn.script_runner(target.reference, "cpu")
    ref_outs_cpu = _reference_outputs(ref_cpu, samples, "cpu")
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
        torch.save(tuple(example), out_dir / "inputs.pt")
        artifacts["inputs"] = str(out_dir / "inputs.pt")
        if target.kind == "callable":
            ref_path = out_dir / f"{target.name}.ts.pt"
            with quiet(cfg.debug):
                torch.jit.save(target.reference, str(ref_path))
            artifacts["reference"] = str(ref_path)

    candidates: list[rn.Candidate] = []
    use_defaults = cfg.default_candidates
    if use_defaults is None:
        use_defaults = not cfg.candidates
    ref_graph: Any = None  # the reference's own exported graph, for divergence search
    if use_defaults:
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
            conv.save_pt2(ep, pt2_path)
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
            conv.save_pte(lowered, pte_path)
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

    tol = Tolerance(cfg.rtol, cfg.atol)
    cells: list[Cell] = []
    latency: dict[str, Any] | None = None
    for device in devices:
        if device == "cpu":
            ref_run, ref_outs = ref_cpu, ref_outs_cpu
        else:
            with quiet(cfg.debug):
                try:
                    ref_run = rn.script_runner(target.reference, device)
                except Exception as exc:
                    raise VerifyError(
                        "run", f"cannot move the TorchScript reference to {device}: {describe(exc)}"
                    ) from exc
                ref_outs = _reference_outputs(ref_run, samples, device)
        timed: list[tuple[rn.Candidate, Cell]] = []
        for cand in candidates:
            if cand.cpu_only and device != "cpu":
                continue
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
        latency=latency,
    )
    report.elapsed_s = time.perf_counter() - t_start
    if cfg.out is not None:
        import json

        (out_dir / "report.json").write_text(json.dumps(report.to_json(), indent=2) + "\n")
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
    pt2: Path
    pte: Path | None
    convert_path: str
    lower_path: str | None
    backend: str
    notes: list[str]


def run_convert(
    model: str,
    inputs: str | None,
    input_shapes: list[str],
    out: Path,
    backend: str = "xnnpack",
    dynamic_dims: list[str] | None = None,
    seed: int = 0,
    debug: bool = False,
) -> ConvertResult:
    if backend not in conv.BACKENDS:
        raise VerifyError("usage", f"unknown backend {backend!r} (xnnpack, portable)")
    dyn = inp.parse_dynamic_dims(dynamic_dims or [])
    example = inp.example_from_options(inputs, input_shapes, seed)
    if example is None:
        raise VerifyError(
            "usage", "convert needs example inputs: --inputs FILE or --input-shape SPEC"
        )
    path = Path(model)
    with quiet(debug):
        ts = load.load_archive(path)
    load.check_signature(ts, example)
    try:
        with quiet(debug):
            ts(*example)
    except Exception as exc:
        raise VerifyError(
            "inputs", f"the model rejected the inputs {inp.describe_args(example)}: {describe(exc)}"
        ) from exc
    dynamic_shapes = inp.dynamic_shapes_for(example, dyn)
    converted = conv.convert_archive(ts, example, dynamic_shapes, debug)
    out.mkdir(parents=True, exist_ok=True)
    pt2 = out / f"{path.stem}.pt2"
    with quiet(debug):
        conv.save_pt2(converted.ep, pt2)
    lowered = conv.lower(converted.ep, example, backend, dynamic_shapes, debug)
    pte = conv.save_pte(lowered, out / f"{path.stem}.pte")
    notes = [f"{p} failed: {r}" for p, r in lowered.attempts]
    return ConvertResult(pt2, pte, converted.path_label, lowered.path, backend, notes)
