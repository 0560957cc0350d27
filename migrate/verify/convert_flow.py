"""`migrate convert`: a TorchScript archive to `.pt2` and `.pte` (and with `--aoti`,
AOTInductor packages), each checked against the archive on a few samples before anything
is written."""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from migrate.verify import convert as conv
from migrate.verify import inputs as inp
from migrate.verify import load, recover
from migrate.verify import runners as rn
from migrate.verify.candidates import reference_outputs, run_candidate
from migrate.verify.compare import Tolerance, json_float
from migrate.verify.errors import VerifyError, describe, one_line, quiet
from migrate.verify.lowering_ladder import (
    archive_methods,
    ladder,
    lowered_buffer,
    program_matches,
    specialisation_samples,
)
from migrate.verify.options import check_tolerances
from migrate.verify.results import cell_reason


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
    packages: list[Any] = field(default_factory=list)  # --aoti: aoti.Package per method
    # --aoti without a .pte: why lowering failed (the .pt2 and the packages were written)
    pte_error: VerifyError | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "verdict": "mismatch" if self.mismatch else ("error" if self.pte_error else "pass"),
            "pt2": {m: str(p) for m, p in self.pt2.items()},
            "pte": None if self.pte is None else str(self.pte),
            "backend": self.backend,
            "samples": self.samples,
            "recovery": [r.to_json() for r in self.recoveries.values()],
            "max_abs": {m: json_float(v) for m, v in self.max_abs.items()},
            "mismatch": self.mismatch,
            "pte_error": None
            if self.pte_error is None
            else {"stage": self.pte_error.stage, "message": self.pte_error.message},
            "notes": self.notes,
            "timings": {k: round(v, 3) for k, v in self.timings.items()},
            "aoti": [
                {
                    "method": p.method,
                    "device": p.device,
                    "path": str(p.path),
                    "compile_s": round(p.compile_s, 3),
                }
                for p in self.packages
            ],
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
        for p in self.packages:
            out.append(
                f"wrote {p.path}  (AOTInductor package, method {p.method}, device {p.device}; "
                f"compiled in {p.compile_s:.1f} s; checked on {self.samples} samples)"
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
    aoti: bool = False,
    device: str = "cpu",
    dynamic_batch: int | None = None,
) -> ConvertResult:
    """`root`: the folder the outputs must stay in (a batch's --out; default: `out`).
    `aoti`: also an AOTInductor package per method, compiled for `device` and checked
    against the archive on the same samples as the .pte (migrate.verify.aoti)."""
    t_start = time.perf_counter()
    timings: dict[str, float] = {}
    if backend not in conv.BACKENDS:
        raise VerifyError("usage", f"unknown backend {backend!r} (xnnpack, portable)")
    check_tolerances(rtol, atol)
    if out.exists() and not out.is_dir():
        raise VerifyError("usage", f"-o {out}: exists and is not a directory")
    if aoti:
        from migrate.verify import aoti as aoti_mod

        rn.resolve_devices(device)  # an accelerator that is not here: before any work
        # No compiler: said before the archive is converted, not after.
        aoti_mod.check_compiler(str(out / f"{Path(model).stem}.pte"))
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
    example, dyn = inp.with_dynamic_batch(example, dyn, dynamic_batch)
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
            ref_by_method[m] = [first, *reference_outputs(run, samples[1:], "cpu")]
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
            specialisation_samples(ts, methods, example, samples, ref_by_method, seed, notes)
    start = time.perf_counter()
    with recover._timed(timings, "lower (methods together)"):
        buffer, lower_error = lowered_buffer(recs, backend, debug)
    if len(recs) == 1:
        timings.pop("lower (methods together)", None)
    if buffer is None:
        assert lower_error is not None
        # No .pte: --aoti still makes the .pt2 and the packages, of programs that match.
        if not aoti or any(
            program_matches(r.ep, samples, ref_by_method[m], tol) for m, r in recs.items()
        ):
            raise lower_error
    result = ConvertResult({}, None, recs, backend, len(samples), notes, timings=timings)
    result.pte_error = lower_error if buffer is None else None
    if len(recs) > 1:
        result.together_s = time.perf_counter() - start
    check_start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="migrate-convert-") as tmp:
        pte_tmp = Path(tmp) / "check.pte"
        if buffer is not None:
            pte_tmp.write_bytes(buffer)
        for m in methods if buffer is not None else []:
            cand = rn.Candidate(
                "pte", "pte", backend, backend=backend, make=lambda d, mm=m: rn.pte_runner(
                    pte_tmp, debug, mm
                ),
            )  # fmt: skip
            with quiet(debug):
                cell = run_candidate(cand, "cpu", samples, ref_by_method[m], tol)
            result.max_abs[m] = cell.max_abs
            if cell.status != "pass":
                result.mismatch = (
                    f"the .pte method {m} differs from the archive: {cell_reason(cell)}; "
                    "nothing written "
                    "(migrate verify shows the details)"
                )
                break
    timings["pte check"] = time.perf_counter() - check_start
    if result.mismatch is None:
        with recover._timed(timings, "save"):
            conv.make_output_folder(out, root or out)
            for m, rec in recs.items():
                stem = path.stem if m == "forward" else f"{path.stem}.{m}"
                with quiet(debug):
                    result.pt2[m] = conv.save_pt2(rec.ep, out / f"{stem}.pt2", root or out)
            if buffer is not None:
                result.pte = conv.save_pte(buffer, out / f"{path.stem}.pte", root or out)
        if aoti:
            from migrate.verify.aoti import write_packages

            def check(cand: rn.Candidate, m: str) -> str | None:
                with quiet(debug):
                    cell = run_candidate(cand, device, samples, ref_by_method[m], tol)
                return None if cell.status == "pass" else cell_reason(cell)

            programs = {m: r.ep for m, r in recs.items()}
            write_packages(result, programs, path.stem, out, root or out, device, check, debug)
    timings["total"] = time.perf_counter() - t_start
    return result


def convert_error_json(exc: VerifyError) -> dict[str, Any]:
    """``convert --format json`` of a failed conversion: the error and every step's full reason."""
    return {
        "verdict": "error",
        "error": {"stage": exc.stage, "message": exc.message},
        "attempts": [recover.attempt_json(a) for a in getattr(exc, "attempts", [])],
    }
