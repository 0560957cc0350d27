"""An archive's methods through the recovery ladder (migrate.verify.recover), each program
checked against the archive's outputs on the samples, and the `.pte` lowered from what it
recovered (one method's lowering, or all methods lowered together)."""

from __future__ import annotations

from typing import Any

import torch

from migrate.verify import convert as conv
from migrate.verify import inputs as inp
from migrate.verify import load, recover
from migrate.verify import runners as rn
from migrate.verify.compare import Tolerance, compare_outputs
from migrate.verify.errors import VerifyError, describe, quiet


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


def program_matches(
    ep: Any, samples: list[inp.Sample], ref_outs: list[Any], tol: Tolerance
) -> str | None:
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


def specialisation_samples(
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
                lambda ep, r=refs: program_matches(ep, base, r, tol),
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
