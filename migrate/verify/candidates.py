"""The candidates verify checks, and each one checked against the TorchScript reference.

A candidate is what the migration makes of the model: the exported program, its `.pt2`
saved and loaded back, the `.pte` lowered from it (for an archive, recovered method by
method: migrate.verify.lowering_ladder), or a file or callable named with `--candidate`.
`run_candidate` runs one on one device over the samples and compares its outputs with the
reference's.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import torch

from migrate.verify import convert as conv
from migrate.verify import inputs as inp
from migrate.verify import load, recover
from migrate.verify import runners as rn
from migrate.verify.branch_check import BranchCheck, export_hint
from migrate.verify.compare import LeafResult, Tolerance, compare_outputs, json_float
from migrate.verify.errors import VerifyError, describe, one_line, quiet
from migrate.verify.lowering_ladder import ladder, lowered_buffer, specialisation_samples
from migrate.verify.options import VerifyConfig
from migrate.verify.results import Cell


def reference_outputs(run: rn.Runner, samples: list[inp.Sample], device: str) -> list[Any]:
    """The reference's output on each sample on `device` (a failure names the sample)."""
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


def nondeterminism(run: rn.Runner, args: tuple[Any, ...], first: Any) -> float:
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


def candidate_from_spec(spec: str, cfg: VerifyConfig, ep_for_pte: Any = None) -> rn.Candidate:
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
    if suffix == ".pt2" and path.is_file():
        from migrate.verify import aoti

        if aoti.is_package(path):
            return aoti.file_candidate(path, cfg.trust_archive)
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


def archive_candidates(
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
        added = specialisation_samples(
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
        ep2 = _saved_and_loaded(ep, pt2_path, cfg)
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


def export_candidates(
    cfg: VerifyConfig,
    target: load.Target,
    example: tuple[Any, ...],
    dynamic_shapes: Any,
    out_dir: Path,
    artifacts: dict[str, str],
    candidates: list[rn.Candidate],
    branch_check: BranchCheck | None,
) -> Any:
    """The target exported once: the program, its .pt2 saved and loaded back, its .pte.

    Returns the exported program (the reference graph for divergence search).
    """
    try:
        if target.kind == "archive":
            converted = conv.convert_archive(target.reference, example, dynamic_shapes, cfg.debug)
        else:
            converted = conv.export_module(target.module, example, dynamic_shapes, cfg.debug)
    except VerifyError as exc:
        hint = export_hint(branch_check)
        if hint and not cfg.debug:
            raise VerifyError(exc.stage, hint + exc.message) from exc
        raise
    ep = converted.ep
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
    ep2 = _saved_and_loaded(ep, pt2_path, cfg)
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
        pte = rn.Candidate("pte", "pte", cfg.backend, backend=cfg.backend, cpu_only=True, error=exc)
    candidates.append(pte)
    return ep


def _saved_and_loaded(ep: Any, pt2_path: Path, cfg: VerifyConfig) -> Any:
    """`ep` saved to `pt2_path` and loaded back: the .pt2 candidate's program."""
    with quiet(cfg.debug):
        conv.save_pt2(ep, pt2_path, cfg.root)
        try:
            return torch.export.load(str(pt2_path))
        except Exception as exc:
            raise VerifyError(
                "export", f"torch.export.load of {pt2_path} failed: {describe(exc)}"
            ) from exc
