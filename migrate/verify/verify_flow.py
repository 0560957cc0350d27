"""`migrate verify`: a TorchScript reference and what the migration makes of it, run on the
same samples on every device, compared leaf by leaf.

`run_verify` reads as its steps: check the settings, load the target and draw the samples
(with `--branches`, samples that reach each side of a data-dependent condition join them),
run the reference on the CPU first (bad inputs are said before any conversion), build the
candidates, run each on each device against the reference, and report. The benchmarks call
it too, without the command line.
"""

from __future__ import annotations

import json
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
    run_branch_check,
)
from migrate.verify.candidates import (
    archive_candidates,
    candidate_from_spec,
    export_candidates,
    nondeterminism,
    reference_outputs,
    run_candidate,
)
from migrate.verify.compare import Tolerance
from migrate.verify.divergence import divergence
from migrate.verify.errors import VerifyError, describe, quiet
from migrate.verify.lowering_ladder import archive_methods
from migrate.verify.options import VerifyConfig, check_tolerances
from migrate.verify.results import Cell, Report, first_error


@dataclass
class _Verification:
    """One verify run's state, filled in step by step."""

    cfg: VerifyConfig
    target: load.Target
    example: tuple[Any, ...]
    methods: list[str]  # forward, or the archive's methods to check
    dynamic_shapes: Any
    samples: list[inp.Sample]
    devices: list[str]
    notes: list[str]
    tol: Tolerance
    branch_check: BranchCheck | None = None
    out_dir: Path = Path()  # set by _open_output_folder
    tmp: tempfile.TemporaryDirectory | None = None  # out_dir when no --out was given
    artifacts: dict[str, str] = field(default_factory=dict)
    ref_cpu: rn.Runner | None = None  # the reference's first method on the CPU
    ref_by_method: dict[str, list[Any]] = field(default_factory=dict)  # CPU outputs
    candidates: list[rn.Candidate] = field(default_factory=list)
    ref_graph: Any = None  # the reference's own exported graph, for divergence search
    recovery: list[dict[str, Any]] = field(default_factory=list)
    cells: list[Cell] = field(default_factory=list)
    latency: dict[str, Any] | None = None


def run_verify(cfg: VerifyConfig) -> Report:
    t_start = time.perf_counter()
    _check_settings(cfg)
    run = _load_and_sample(cfg)
    if cfg.branches:
        _add_branch_samples(run)
    _open_output_folder(run)
    _run_reference_on_cpu(run)
    if cfg.out is not None:
        _save_inputs_and_reference(run)
    _build_candidates(run)
    for device in run.devices:
        _compare_on(run, device)
    return _report(run, t_start)


def _check_settings(cfg: VerifyConfig) -> None:
    """Usage errors in the settings, said before anything is loaded."""
    if cfg.samples < 0:
        raise VerifyError("usage", "--samples must be >= 0")
    if cfg.original not in (None, "trace", "script"):
        raise VerifyError("usage", f"--original must be trace or script, not {cfg.original!r}")
    if cfg.backend not in conv.BACKENDS:
        raise VerifyError("usage", f"unknown backend {cfg.backend!r} (xnnpack, portable)")
    check_tolerances(cfg.rtol, cfg.atol)


def _sized(cfg: VerifyConfig, dyn: list) -> int:
    """How many samples of other sizes verify adds."""
    return 3 * len(dyn) if cfg.recorded_shapes is None else len(cfg.recorded_shapes)


def _load_and_sample(cfg: VerifyConfig) -> _Verification:
    """The target, its example inputs, the methods to check and the samples."""
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
    example, dyn = inp.with_dynamic_batch(example, dyn, cfg.dynamic_batch)
    dynamic_shapes = inp.dynamic_shapes_for(example, dyn)
    samples = list(inp.iter_samples(example, cfg.samples, cfg.seed, dyn, cfg.recorded_shapes))
    tol = Tolerance(cfg.rtol, cfg.atol)
    return _Verification(
        cfg, target, example, methods, dynamic_shapes, samples, devices, notes, tol
    )


def _add_branch_samples(run: _Verification) -> None:
    """--branches, before the reference runs: the samples found for each side of a
    data-dependent condition join the comparison."""
    cfg, target = run.cfg, run.target
    if target.kind == "callable":
        eager = target.module
        ref_kind = cfg.original or "trace"
    else:
        with quiet(cfg.debug):
            eager = eager_for_archive(target.reference)
        ref_kind = "archive"
    with quiet(cfg.debug):
        run.branch_check, extra = run_branch_check(
            eager,
            target.reference,
            ref_kind,
            run.example,
            run.samples,
            cfg.seed,
            cfg.rtol,
            cfg.atol,
        )
    run.samples.extend(extra)


def _open_output_folder(run: _Verification) -> None:
    """--out, else a temporary folder the artifacts go to (and leave with)."""
    cfg = run.cfg
    out_dir = cfg.out
    if out_dir is None:
        run.tmp = tempfile.TemporaryDirectory(prefix="migrate-verify-")
        out_dir = Path(run.tmp.name)
    if cfg.root is not None:
        conv.make_output_folder(out_dir, cfg.root)
    run.out_dir = out_dir


def _run_reference_on_cpu(run: _Verification) -> None:
    """The reference's outputs on the CPU, for every method; notes when it is not
    deterministic or left in training mode."""
    reference, methods = run.target.reference, run.methods
    run.ref_cpu = rn.script_runner(reference, "cpu", methods[0])
    run.ref_by_method = {
        m: reference_outputs(rn.script_runner(reference, "cpu", m), run.samples, "cpu")
        for m in methods
    }
    ref_outs_cpu = run.ref_by_method[methods[0]]
    drift = nondeterminism(run.ref_cpu, run.samples[0].args, ref_outs_cpu[0])
    if drift > 0:
        msg = (
            f"the TorchScript reference is not deterministic (two runs on the example differ by "
            f"{drift:.3g}); is the model in training mode (dropout)?"
        )
        run.notes.append(msg)
    if run.target.module is not None:
        left = rn.training_modules(run.target.module)
        if left:
            run.notes.append(f"target modules in training mode: {', '.join(left[:5])}")


def _save_inputs_and_reference(run: _Verification) -> None:
    """With --out: the example inputs, and a callable's TorchScript reference."""
    cfg, target, out_dir = run.cfg, run.target, run.out_dir
    with conv.output(out_dir / "inputs.pt", cfg.root) as temp:
        torch.save(tuple(run.example), temp)
    run.artifacts["inputs"] = str(out_dir / "inputs.pt")
    if target.kind == "callable":
        ref_path = out_dir / f"{target.name}.ts.pt"
        with quiet(cfg.debug), conv.output(ref_path, cfg.root) as temp:
            torch.jit.save(target.reference, str(temp))
        run.artifacts["reference"] = str(ref_path)


def _build_candidates(run: _Verification) -> None:
    """The default candidates (an archive's through the recovery ladder, else the export of
    the module), the AOTInductor packages with --aoti, then each --candidate."""
    cfg, target = run.cfg, run.target
    use_defaults = cfg.default_candidates
    if use_defaults is None:
        use_defaults = not cfg.candidates
    if use_defaults and target.kind == "archive":
        run.ref_graph = archive_candidates(
            cfg, target, run.methods, run.example, run.dynamic_shapes, run.samples,
            run.ref_by_method, run.tol, run.out_dir, run.artifacts, run.candidates,
            run.recovery, run.notes, run.branch_check,
        )  # fmt: skip
    elif use_defaults:
        run.ref_graph = export_candidates(
            cfg, target, run.example, run.dynamic_shapes, run.out_dir, run.artifacts,
            run.candidates, run.branch_check,
        )  # fmt: skip
    if cfg.aoti:
        from migrate.verify import aoti

        programs = {c.method: c.ep for c in run.candidates if c.kind == "exported_program"}
        if not programs:
            raise VerifyError(
                "usage", "--aoti compiles the exported program: not with --no-default-candidates"
            )
        run.candidates += aoti.package_candidates(
            programs, target.name, run.devices, run.out_dir, run.artifacts, cfg.root, cfg.debug
        )
    for spec in cfg.candidates:
        run.candidates.append(candidate_from_spec(spec, cfg))


def _reference_on(run: _Verification, device: str) -> tuple[rn.Runner, dict[str, list[Any]]]:
    """The reference's runner and outputs on `device` (the CPU's were computed first)."""
    cfg, target, methods = run.cfg, run.target, run.methods
    if device == "cpu":
        assert run.ref_cpu is not None
        return run.ref_cpu, run.ref_by_method
    with quiet(cfg.debug):
        try:
            ref_run = rn.script_runner(target.reference, device, methods[0])
            outs_by_method = {
                m: reference_outputs(
                    rn.script_runner(target.reference, device, m), run.samples, device
                )
                for m in methods
            }
        except VerifyError:
            raise
        except Exception as exc:
            raise VerifyError(
                "run", f"cannot move the TorchScript reference to {device}: {describe(exc)}"
            ) from exc
    return ref_run, outs_by_method


def _compare_on(run: _Verification, device: str) -> None:
    """Every candidate that runs on `device` against the reference there: one cell each;
    on the CPU a failing cell gets its first divergence; --bench times them."""
    cfg, samples = run.cfg, run.samples
    ref_run, outs_by_method = _reference_on(run, device)
    timed: list[tuple[rn.Candidate, Cell]] = []
    for cand in run.candidates:
        if cand.cpu_only and device != "cpu":
            continue
        ref_outs = outs_by_method.get(cand.method, outs_by_method[run.methods[0]])
        with quiet(cfg.debug):
            cell = run_candidate(cand, device, samples, ref_outs, run.tol)
        if cfg.bench and cell.status != "error":
            timed.append((cand, cell))
        if cell.status == "fail" and device == "cpu":
            cell.divergence = divergence(
                cand, run.cells, run.target, run.ref_graph, samples, cell, cfg
            )
        run.cells.append(cell)
    if cfg.bench:
        from migrate.verify.bench import bench_verify

        with quiet(cfg.debug):
            run.latency = bench_verify(ref_run, timed, samples[0].args, device, cfg, run.latency)


def _report(run: _Verification, t_start: float) -> Report:
    """The report (with --out also written as report.json); a temporary folder goes, and
    with it the artifacts the report would name."""
    cfg, target, devices = run.cfg, run.target, run.devices
    errors: list[dict[str, str]] = []
    err = first_error(run.cells)
    if err:
        errors.append(err)
    branch_check = run.branch_check
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
        samples=[
            {"name": s.name, "inputs": inp.describe_args(s.args), **s.meta} for s in run.samples
        ],
        candidates=[
            {
                "name": c.name,
                "kind": c.kind,
                "source": c.source,
                "backend": c.backend,
                "devices": ["cpu"] if c.cpu_only else devices,
            }
            for c in run.candidates
        ],
        cells=run.cells,
        artifacts=run.artifacts,
        errors=errors,
        notes=run.notes,
        seed=cfg.seed,
        bench=cfg.bench,
        branches=branch_check,
        settings=cfg.settings(),
        recovery=run.recovery,
        latency=run.latency,
    )
    report.elapsed_s = time.perf_counter() - t_start
    if cfg.out is not None:
        with conv.output(run.out_dir / "report.json", cfg.root) as temp:
            temp.write_text(json.dumps(report.to_json(), indent=2) + "\n")
        report.artifacts["report"] = str(run.out_dir / "report.json")
    if run.tmp is not None:
        report.artifacts = {}
        run.tmp.cleanup()
    return report
