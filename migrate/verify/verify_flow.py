"""`migrate verify`: the flow, independent of the CLI (the benchmarks call it too)."""

from __future__ import annotations

import tempfile
import time
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
from migrate.verify.candidates import (
    archive_candidates,
    candidate_from_spec,
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
    example, dyn = inp.with_dynamic_batch(example, dyn, cfg.dynamic_batch)
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
        conv.make_output_folder(out_dir, cfg.root)
    artifacts: dict[str, str] = {}
    errors: list[dict[str, str]] = []

    # Reference on the CPU first: bad inputs are reported before any conversion.
    ref_cpu = rn.script_runner(target.reference, "cpu", methods[0])
    ref_by_method = {
        m: reference_outputs(rn.script_runner(target.reference, "cpu", m), samples, "cpu")
        for m in methods
    }
    ref_outs_cpu = ref_by_method[methods[0]]
    drift = nondeterminism(ref_cpu, samples[0].args, ref_outs_cpu[0])
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
        ref_graph = archive_candidates(
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
    if cfg.aoti:
        from migrate.verify import aoti

        programs = {c.method: c.ep for c in candidates if c.kind == "exported_program"}
        if not programs:
            raise VerifyError(
                "usage", "--aoti compiles the exported program: not with --no-default-candidates"
            )
        candidates += aoti.package_candidates(
            programs, target.name, devices, out_dir, artifacts, cfg.root, cfg.debug
        )
    for spec in cfg.candidates:
        candidates.append(candidate_from_spec(spec, cfg))

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
                        m: reference_outputs(
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
                cell.divergence = divergence(cand, cells, target, ref_graph, samples, cell, cfg)
            cells.append(cell)
        if cfg.bench:
            from migrate.verify.bench import bench_verify

            with quiet(cfg.debug):
                latency = bench_verify(ref_run, timed, samples[0].args, device, cfg, latency)
    err = first_error(cells)
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
