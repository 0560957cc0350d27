"""Typer commands ``migrate verify`` and ``migrate convert``.

Importing this module is cheap: torch and executorch are imported inside the
command bodies only (they belong to the ``verify`` extra).
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from migrate.verify.errors import INSTALL_HINT, VerifyError

_DEBUG_HELP = "Show full tracebacks instead of one-line errors."
_INPUTS_HELP = "A torch.save file holding a tuple of example values."
_SHAPE_HELP = (
    "Example input as a shape spec, repeatable, in argument order: DIMxDIM[:DTYPE[:LOW..HIGH]] "
    "(1x3x224x224:float32, 2x7:int64:0..20) or int=N, float=X, bool=true."
)
_DYN_HELP = "A dynamic dimension INPUT:MIN:MAX (dim 0) or INPUT:DIM:MIN:MAX, repeatable."
_BRANCHES_HELP = (
    "Find the data-dependent conditions of forward (needs the module's Python source), add "
    "samples that take each side, and fail when the TorchScript reference disagrees with the "
    "eager module (a trace that froze a branch)."
)

_TRUST_HELP = (
    "Load the archive without auditing its code first (it may then read or write files "
    "while it is loaded and run)."
)
_MAX_BYTES_HELP = (
    "Refuse sample inputs larger than this many bytes in all (default: a quarter of "
    "physical memory)."
)
_METHOD_HELP = "Convert only this method of the archive (forward or an @torch.jit.export one)."
_MANIFEST_HELP = (
    "A registry batch from this file: JSON lines or CSV, one archive per row (archive, inputs, "
    "input_shapes, rtol, atol, devices, method, timeout); a row's settings win over the flags."
)
_JOBS_HELP = "Archives run at once, each in its own process (default: cores, limited by memory)."
_TIMEOUT_HELP = "Seconds one archive may take in a batch; it is then killed (verdict timeout)."
_RESULTS_HELP = "The batch's JSON-lines results (default OUT/results.jsonl); a rerun resumes it."
_RERUN_HELP = "failed: run again the archives whose result is not pass; all: every archive."
_RAY_HELP = "Run the batch as Ray tasks (a local instance, or RAY_ADDRESS / --ray-address)."
_RAY_ADDRESS_HELP = "The Ray cluster to join (implies --ray)."
_AOTI_HELP = (
    "Also compile the exported program into an AOTInductor package, <name>.aoti.pt2 (C++ runs "
    "it with torch::inductor::AOTIModelPackageLoader; not the ExportedProgram <name>.pt2), "
    "checked against the archive. Needs a C++ compiler (CXX, else g++)."
)
_DYNAMIC_BATCH_HELP = (
    "Dimension 0 of every tensor input varies over 1..MAX as one batch size (a batch of 1 in "
    "the example is doubled: export fixes a size of 1)."
)
_EVIDENCE_HELP = (
    "Inputs of the shapes a capture's calls had in `migrate record`'s run (sizes that varied "
    "become --dynamic-dim ranges)."
)

# Options shared by verify and convert.
InputsOpt = Annotated[str | None, typer.Option("--inputs", "-i", help=_INPUTS_HELP)]
InputShapeOpt = Annotated[list[str] | None, typer.Option("--input-shape", help=_SHAPE_HELP)]
DynamicDimOpt = Annotated[list[str] | None, typer.Option("--dynamic-dim", help=_DYN_HELP)]
TrustArchiveOpt = Annotated[bool, typer.Option("--trust-archive", help=_TRUST_HELP)]
MaxInputBytesOpt = Annotated[
    int | None, typer.Option("--max-input-bytes", help=_MAX_BYTES_HELP, show_default=False)
]
ManifestOpt = Annotated[Path | None, typer.Option("--manifest", help=_MANIFEST_HELP)]
JobsOpt = Annotated[int | None, typer.Option("--jobs", "-j", help=_JOBS_HELP)]
TimeoutOpt = Annotated[float | None, typer.Option("--timeout", help=_TIMEOUT_HELP)]
ResultsOpt = Annotated[Path | None, typer.Option("--results", help=_RESULTS_HELP)]
RerunOpt = Annotated[str | None, typer.Option("--rerun", help=_RERUN_HELP)]
RayOpt = Annotated[bool, typer.Option("--ray", help=_RAY_HELP)]
RayAddressOpt = Annotated[str | None, typer.Option("--ray-address", help=_RAY_ADDRESS_HELP)]
DebugOpt = Annotated[bool, typer.Option("--debug", help=_DEBUG_HELP)]
AotiOpt = Annotated[bool, typer.Option("--aoti", help=_AOTI_HELP)]
DynamicBatchOpt = Annotated[
    int | None,
    typer.Option("--dynamic-batch", metavar="MAX", help=_DYNAMIC_BATCH_HELP, show_default=False),
]
EvidenceOpt = Annotated[
    str | None, typer.Option("--evidence", metavar="FILE[#PATH:LINE]", help=_EVIDENCE_HELP)
]

#: Built-in defaults of the settings [tool.migrate.verify] may change.
DEFAULTS: dict[str, object] = {
    "device": "auto",
    "samples": 3,
    "seed": 0,
    "rtol": None,
    "atol": None,
}


def _require_extra() -> None:
    for mod in ("torch", "executorch"):
        if importlib.util.find_spec(mod) is None:
            typer.echo(INSTALL_HINT, err=True)
            raise typer.Exit(2)


def _fail(exc: VerifyError) -> typer.Exit:
    from migrate.printable import printable

    typer.echo(printable(f"error: {exc.stage}: {exc.message}"), err=True)
    return typer.Exit(2)


def _settings(
    target: str, flags: dict[str, object], config_file: str | None, isolated: bool
) -> tuple[dict[str, object], str | None, list[str]]:
    """Flags win over [tool.migrate.verify] of the closest pyproject.toml, which wins over the
    built-in defaults. Returns (settings, config path, keys taken from the file)."""
    from migrate.config import ConfigError, resolve_config

    start = target if os.path.exists(target) else os.getcwd()
    try:
        config = resolve_config([start], config_file, isolated)
    except ConfigError as exc:
        raise _fail(VerifyError("config", str(exc))) from None
    where = f"{config.path} [tool.migrate]"
    for key in ("samples", "rtol", "atol"):
        value = config.verify.get(key)
        if value is not None and value < 0:  # type: ignore[operator]
            raise _fail(VerifyError("config", f"{where}: `verify.{key}` must be >= 0"))
    settings = dict(DEFAULTS)
    used = []
    for key, value in flags.items():
        if value is not None:
            settings[key] = value
        elif key in config.verify:
            settings[key] = config.verify[key]
            used.append(key)
    return settings, (str(config.path) if config.path else None), used


def _check_options(debug: bool, **values) -> None:
    """Every option torch is not needed to judge, before torch is imported (a usage error
    costs a fraction of a second): one line naming the option and the cause, exit 2."""
    from migrate.verify.options import check_options

    try:
        check_options(**values)
    except VerifyError as exc:
        if debug:
            raise
        raise _fail(exc) from None


def _evidence_inputs(evidence, inputs, input_shape, dynamic_dim, dynamic_batch):
    """`--evidence FILE[#PATH:LINE]`: the shapes (and varying sizes) `migrate record` saw,
    instead of --inputs/--input-shape/--dynamic-dim; said on stderr."""
    from migrate.record.verify_inputs import verify_inputs

    if input_shape or dynamic_dim or inputs or dynamic_batch:
        raise _fail(
            VerifyError(
                "usage",
                "--evidence replaces --inputs/--input-shape/--dynamic-dim/--dynamic-batch",
            )
        )
    try:
        recorded = verify_inputs(evidence)
    except ValueError as exc:
        raise _fail(VerifyError("usage", str(exc))) from None
    checked = f"; and {len(recorded.checked)} recorded shapes" if recorded.checked else ""
    typer.echo(
        f"inputs from {recorded.site}: {' '.join(recorded.shapes)} {' '.join(recorded.dynamic)}"
        f"{checked}{f' ({recorded.note})' if recorded.note else ''}",
        err=True,
    )
    return recorded


def _warn_trust(trust: bool, target: str) -> None:
    if trust:
        typer.echo(
            f"warning: --trust-archive: {target} is loaded without audit; its code runs with "
            "your permissions",
            err=True,
        )


def _console():
    from rich.console import Console

    return Console(file=sys.stdout, width=None if sys.stdout.isatty() else 200)


def _batch_usage(
    target: str | None,
    manifest: Path | None,
    jobs: int | None,
    timeout: float | None,
    rerun: str | None,
    ray: bool,
    results: Path | None,
) -> bool:
    """Whether this is a registry batch (a folder or --manifest); batch-only flags need one."""
    is_batch = manifest is not None or (target is not None and os.path.isdir(target))
    if manifest is not None and target is not None:
        raise _fail(VerifyError("usage", "give a folder or --manifest FILE, not both"))
    if target is None and manifest is None:
        raise _fail(VerifyError("usage", f"give {_FORMS}"))
    if not is_batch:
        used = [
            flag
            for flag, value in (
                ("-j", jobs), ("--timeout", timeout), ("--rerun", rerun), ("--results", results),
            )
            if value is not None
        ] + (["--ray"] if ray else [])  # fmt: skip
        if used:
            raise _fail(
                VerifyError("usage", f"{', '.join(used)}: only for a folder or --manifest batch")
            )
    if jobs is not None and jobs < 1:
        raise _fail(VerifyError("usage", f"-j must be 1 or more, not {jobs}"))
    if timeout is not None and not timeout > 0:
        raise _fail(VerifyError("usage", f"--timeout must be > 0 seconds, not {timeout}"))
    if rerun not in (None, "failed", "all"):
        raise _fail(VerifyError("usage", f"--rerun must be failed or all, not {rerun!r}"))
    return is_batch


# --- Checks that need no torch: a usage error answers before the heavy imports.
_FORMS = (
    "a TorchScript archive (.pt), a folder of archives, --manifest FILE or package.module:callable"
)


def _target_problem(
    target: str | None, manifest: Path | None, callables: bool
) -> VerifyError | None:
    """What is wrong with the named archive, callable or manifest, found without torch."""
    import zipfile

    from migrate.verify.options import is_callable_spec

    if manifest is not None and not manifest.is_file():
        why = "is a directory" if manifest.is_dir() else "no such file"
        return VerifyError("usage", f"--manifest {manifest}: {why}")
    if target is None or os.path.isdir(target):
        return None
    if not os.path.exists(target):
        if callables and is_callable_spec(target):
            # The top-level package can be found (finding it runs none of its code).
            top = target.rpartition(":")[0].split(".")[0]
            if os.getcwd() not in sys.path:  # as import_callable does
                sys.path.insert(0, os.getcwd())
            if importlib.util.find_spec(top) is None:
                return VerifyError("load", f"cannot import {target}: no module named {top!r}")
            return None  # imported later, with torch
        forms = (
            _FORMS
            if callables
            else "a TorchScript archive (.pt), a folder of archives or --manifest FILE"
        )
        return VerifyError("load", f"no such file: {target} (give {forms})")
    if not zipfile.is_zipfile(target):
        return VerifyError("load", f"{target} is not a TorchScript archive (not a zip archive)")
    return None


def _check_outputs(out: Path, names: list[str]) -> None:
    """Before torch is imported: an artifact the run would write where a symlink is (a
    checkout can ship `model.pte -> ../victim`) is refused, in one line."""
    from migrate.safe_write import UnsafeOutput, check_output

    for name in names:
        try:
            check_output(out / name, out)
        except UnsafeOutput as exc:
            raise _fail(VerifyError("output", str(exc))) from None


def _check_target(target: str | None, manifest: Path | None, callables: bool, debug: bool) -> None:
    problem = _target_problem(target, manifest, callables)
    if problem is not None:
        if debug:
            raise problem
        raise _fail(problem)


def _run_batch(
    mode: str,
    target: str | None,
    manifest: Path | None,
    out: Path,
    results: Path | None,
    settings: dict[str, object],
    jobs: int | None,
    timeout: float | None,
    rerun: str | None,
    ray: bool,
    ray_address: str | None,
    fmt: str,
) -> None:
    """A folder of archives or a manifest: one worker process per archive, results resumable."""
    import json

    from migrate.cli.scan_command import _sigterm_as_interrupt
    from migrate.verify import batch, batch_output
    from migrate.verify.batch_jobs import build_jobs
    from migrate.verify.ray_runner import INSTALL_RAY, ray_available, run_on_ray

    if ray and not ray_available():
        typer.echo(f"error: {INSTALL_RAY}", err=True)
        raise typer.Exit(2)
    if out.exists() and not out.is_dir():
        raise _fail(VerifyError("usage", f"-o {out}: exists and is not a directory"))
    try:
        job_list = build_jobs(mode, target, manifest, out, settings, timeout)
    except VerifyError as exc:
        raise _fail(exc) from None
    n, label = (jobs, f"-j {jobs}") if jobs else batch.default_jobs()
    if ray:
        label = f"ray {ray_address or os.environ.get('RAY_ADDRESS') or 'local'}"
    progress = batch_output.Progress(fmt == "text")
    try:
        with _sigterm_as_interrupt():  # SIGTERM too stops the workers, and the batch resumes
            result = batch.run_batch(
                job_list,
                results or out / "results.jsonl",
                # A local Ray instance gets -j CPUs when given (else all of them).
                (jobs or 0) if ray else n,
                rerun=rerun,
                remote=(
                    (lambda docs, n_jobs, done: run_on_ray(docs, ray_address, n_jobs, done))
                    if ray
                    else None
                ),
                on_start=progress.start,
                on_result=progress.advance,
            )
    except VerifyError as exc:
        raise _fail(exc) from None
    except KeyboardInterrupt:
        typer.echo("interrupted: rerun the same command to resume", err=True)
        raise typer.Exit(130) from None
    finally:
        progress.stop()
    result.jobs_label = label
    if fmt == "json":
        typer.echo(json.dumps(batch_output.summary_json(result), indent=2))
    else:
        batch_output.render_summary(result, _console())
    raise typer.Exit(result.exit_code)


def verify(
    target: Annotated[
        str | None,
        typer.Argument(
            help="A TorchScript archive (.pt from torch.jit.save), package.module:callable "
            "returning an nn.Module or (module, example_inputs), or a folder of archives "
            "(or --manifest FILE instead).",
            show_default=False,
        ),
    ] = None,
    inputs: InputsOpt = None,
    input_shape: InputShapeOpt = None,
    dynamic_dim: DynamicDimOpt = None,
    device: Annotated[
        str | None,
        typer.Option(
            "--device",
            help="auto (CPU plus the accelerator; the default), cpu, cuda, mps, xpu.",
            show_default=False,
        ),
    ] = None,
    samples: Annotated[
        int | None,
        typer.Option("--samples", help="Seeded random samples besides the example (default 3)."),
    ] = None,
    seed: Annotated[
        int | None, typer.Option("--seed", help="Seed for the random samples (default 0).")
    ] = None,
    rtol: Annotated[
        float | None, typer.Option("--rtol", help="Relative tolerance for floating outputs.")
    ] = None,
    atol: Annotated[
        float | None, typer.Option("--atol", help="Absolute tolerance for floating outputs.")
    ] = None,
    fmt: Annotated[str, typer.Option("--format", help="text or json.")] = "text",
    out: Annotated[
        Path | None, typer.Option("--out", help="Write artifacts and report.json here.")
    ] = None,
    candidate: Annotated[
        list[str] | None,
        typer.Option(
            "--candidate",
            help="A .pt2 or .pte file, or package.module:callable, compared with the reference "
            "(repeatable). When given, the default candidates are skipped unless "
            "--default-candidates.",
        ),
    ] = None,
    default_candidates: Annotated[
        bool | None,
        typer.Option(
            "--default-candidates/--no-default-candidates",
            help="Also check the exported program, the .pt2 round trip and the .pte.",
            show_default=False,
        ),
    ] = None,
    original: Annotated[
        str | None,
        typer.Option("--original", help="For a callable target: trace (default) or script."),
    ] = None,
    backend: Annotated[
        str, typer.Option("--backend", help="ExecuTorch backend: xnnpack or portable.")
    ] = "xnnpack",
    bench: Annotated[
        bool,
        typer.Option(
            "--bench",
            help="Also report each runtime's per-call latency from Python (median, min, p90 over "
            "at least 0.2 s) and its load time, per device.",
        ),
    ] = False,
    bench_runs: Annotated[
        int, typer.Option("--bench-runs", help="At least this many timed calls for --bench.")
    ] = 10,
    threads: Annotated[
        int | None,
        typer.Option(
            "--threads",
            help="With --bench: torch's and ExecuTorch's thread count while timing (default: "
            "as the libraries set them; both are printed).",
            show_default=False,
        ),
    ] = None,
    branches: Annotated[bool, typer.Option("--branches", help=_BRANCHES_HELP)] = False,
    config_file: Annotated[
        str | None,
        typer.Option(
            "--config", help="Read [tool.migrate.verify] defaults from this pyproject.toml."
        ),
    ] = None,
    isolated: Annotated[
        bool, typer.Option("--isolated", help="Ignore pyproject.toml configuration.")
    ] = False,
    trust_archive: TrustArchiveOpt = False,
    max_input_bytes: MaxInputBytesOpt = None,
    method: Annotated[
        str | None, typer.Option("--method", help=_METHOD_HELP.replace("Convert", "Check"))
    ] = None,
    manifest: ManifestOpt = None,
    jobs: JobsOpt = None,
    timeout: TimeoutOpt = None,
    results: ResultsOpt = None,
    rerun: RerunOpt = None,
    ray: RayOpt = False,
    ray_address: RayAddressOpt = None,
    debug: DebugOpt = False,
    evidence: EvidenceOpt = None,
    aoti: AotiOpt = False,
    dynamic_batch: DynamicBatchOpt = None,
) -> None:
    """Check that a converted or migrated model gives the TorchScript numbers (exit 0 pass, 1
    mismatch, 2 error)."""
    if fmt not in ("text", "json"):
        raise _fail(VerifyError("usage", f"--format must be text or json, not {fmt!r}"))
    for name, value in (("--rtol", rtol), ("--atol", atol), ("--samples", samples)):
        if value is not None and not value >= 0:
            raise _fail(VerifyError("usage", f"{name} must be >= 0, not {value}"))
    if threads is not None and threads < 1:
        raise _fail(VerifyError("usage", f"--threads must be at least 1, not {threads}"))
    if bench_runs < 1:
        raise _fail(VerifyError("usage", f"--bench-runs must be at least 1, not {bench_runs}"))
    _check_options(
        debug, inputs=inputs, input_shapes=input_shape or (), dynamic_dims=dynamic_dim or (),
        device=device, method=method, backend=backend, original=original,
        candidates=candidate or (), max_input_bytes=max_input_bytes, out=out,
        dynamic_batch=dynamic_batch,
    )  # fmt: skip
    if aoti and default_candidates is False:
        raise _fail(
            VerifyError(
                "usage", "--aoti compiles the exported program: not with --no-default-candidates"
            )
        )
    ray = ray or ray_address is not None
    is_batch = _batch_usage(target, manifest, jobs, timeout, rerun, ray, results)
    _require_extra()  # finds the packages without importing them
    _check_target(target, manifest, callables=True, debug=debug)
    settings, config_path, from_config = _settings(
        target or str(manifest),
        {"device": device, "samples": samples, "seed": seed, "rtol": rtol, "atol": atol},
        config_file,
        isolated,
    )
    if is_batch:
        extra = [
            flag
            for flag, value in (
                ("--candidate", candidate), ("--bench", bench), ("--branches", branches),
                ("--original", original), ("--default-candidates", default_candidates),
                ("--threads", threads),
            )
            if value
        ]  # fmt: skip
        if extra:
            raise _fail(VerifyError("usage", f"{', '.join(extra)}: not available in a batch"))
        if out is None and results is None:
            raise _fail(
                VerifyError("usage", "a batch needs --out DIR (artifacts and results.jsonl)")
            )
        _run_batch(
            "verify", target, manifest, out or results.parent, results,  # type: ignore[union-attr]
            {
                "inputs": inputs, "input_shapes": list(input_shape or []),
                "dynamic_dims": list(dynamic_dim or []), "backend": backend, "method": method,
                "trust": trust_archive, "max_input_bytes": max_input_bytes, **settings,
                "aoti": aoti, "dynamic_batch": dynamic_batch,
            },
            jobs, timeout, rerun, ray, ray_address, fmt,
        )  # fmt: skip
    assert target is not None
    if out is not None:
        archive = (
            [f"{Path(target).stem}{s}" for s in (".pt2", ".pte", ".aoti.pt2")]
            if os.path.isfile(target)
            else []
        )
        _check_outputs(out, ["report.json", "inputs.pt", *archive])
    recorded = None
    if evidence is not None:
        recorded = _evidence_inputs(evidence, inputs, input_shape, dynamic_dim, dynamic_batch)
        input_shape, dynamic_dim = recorded.shapes, recorded.dynamic
    from migrate.verify.options import VerifyConfig
    from migrate.verify.report import render_json, render_text
    from migrate.verify.verify_flow import run_verify

    cfg = VerifyConfig(
        target=target,
        inputs=inputs,
        input_shapes=list(input_shape or []),
        dynamic_dims=list(dynamic_dim or []),
        device=settings["device"],  # type: ignore[arg-type]
        samples=settings["samples"],  # type: ignore[arg-type]
        seed=settings["seed"],  # type: ignore[arg-type]
        rtol=settings["rtol"],  # type: ignore[arg-type]
        atol=settings["atol"],  # type: ignore[arg-type]
        candidates=list(candidate or []),
        default_candidates=default_candidates,
        original=original,
        backend=backend,
        out=out,
        bench=bench,
        bench_runs=bench_runs,
        threads=threads,
        debug=debug,
        branches=branches,
        config_path=config_path,
        from_config=from_config,
        trust_archive=trust_archive,
        max_input_bytes=max_input_bytes,
        method=method,
        recorded_shapes=recorded.checked if recorded is not None else None,
        aoti=aoti,
        dynamic_batch=dynamic_batch,
    )
    _warn_trust(trust_archive, target)
    try:
        report = run_verify(cfg)
    except VerifyError as exc:
        if debug:
            raise
        raise _fail(exc) from None
    if fmt == "json":
        typer.echo(render_json(report))
    else:
        render_text(report, _console())
    for err in report.errors:
        typer.echo(f"error: {err['stage']}: {err['message']}", err=True)
    raise typer.Exit(report.exit_code)


def convert(
    model: Annotated[
        str | None,
        typer.Argument(
            help="A TorchScript archive (.pt from torch.jit.save) or a folder of archives "
            "(or --manifest FILE instead).",
            show_default=False,
        ),
    ] = None,
    inputs: InputsOpt = None,
    input_shape: InputShapeOpt = None,
    out: Annotated[
        Path, typer.Option("--out", "-o", help="Output directory for <name>.pt2 and <name>.pte.")
    ] = Path("."),
    backend: Annotated[
        str, typer.Option("--backend", help="ExecuTorch backend: xnnpack or portable (none).")
    ] = "xnnpack",
    dynamic_dim: DynamicDimOpt = None,
    method: Annotated[str | None, typer.Option("--method", help=_METHOD_HELP)] = None,
    trust_archive: TrustArchiveOpt = False,
    max_input_bytes: MaxInputBytesOpt = None,
    manifest: ManifestOpt = None,
    jobs: JobsOpt = None,
    timeout: TimeoutOpt = None,
    results: ResultsOpt = None,
    rerun: RerunOpt = None,
    ray: RayOpt = False,
    ray_address: RayAddressOpt = None,
    fmt: Annotated[
        str, typer.Option("--format", help="text or json (one archive's result, or a batch's).")
    ] = "text",
    debug: DebugOpt = False,
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="Print every recovery step's full reason.")
    ] = False,
    timings: Annotated[
        bool, typer.Option("--timings", help="Print the seconds each stage took.")
    ] = False,
    aoti: AotiOpt = False,
    device: Annotated[
        str | None,
        typer.Option(
            "--device",
            help="With --aoti: the device the package is compiled for, cpu (default) or cuda[:N].",
            show_default=False,
        ),
    ] = None,
    dynamic_batch: DynamicBatchOpt = None,
    evidence: EvidenceOpt = None,
) -> None:
    """Convert a TorchScript archive to OUT/<name>.pt2 (torch.export) and OUT/<name>.pte
    (ExecuTorch), and with --aoti OUT/<name>.aoti.pt2 (an AOTInductor package for C++), checked
    against the archive on a few samples (exit 1 when they differ)."""
    if out.exists() and not out.is_dir():
        raise _fail(VerifyError("usage", f"-o {out}: exists and is not a directory"))
    if fmt not in ("text", "json"):
        raise _fail(VerifyError("usage", f"--format must be text or json, not {fmt!r}"))
    _check_options(
        debug, inputs=inputs, input_shapes=input_shape or (), dynamic_dims=dynamic_dim or (),
        method=method, backend=backend, max_input_bytes=max_input_bytes,
        dynamic_batch=dynamic_batch, aoti=aoti, device=device,
    )  # fmt: skip
    ray = ray or ray_address is not None
    is_batch = _batch_usage(model, manifest, jobs, timeout, rerun, ray, results)
    _require_extra()  # finds the packages without importing them
    _check_target(model, manifest, callables=False, debug=debug)
    if evidence is not None:
        if is_batch:
            raise _fail(VerifyError("usage", "--evidence: not available in a batch"))
        recorded = _evidence_inputs(evidence, inputs, input_shape, dynamic_dim, dynamic_batch)
        input_shape, dynamic_dim = recorded.shapes, recorded.dynamic
    if not is_batch and inputs is None and not input_shape:
        raise _fail(
            VerifyError(
                "usage", "convert needs example inputs: --inputs FILE or --input-shape SPEC"
            )
        )
    if is_batch:
        _run_batch(
            "convert", model, manifest, out, results,
            {
                "inputs": inputs, "input_shapes": list(input_shape or []),
                "dynamic_dims": list(dynamic_dim or []), "backend": backend, "method": method,
                "trust": trust_archive, "max_input_bytes": max_input_bytes,
                "aoti": aoti, "aoti_device": device, "dynamic_batch": dynamic_batch,
            },
            jobs, timeout, rerun, ray, ray_address, fmt,
        )  # fmt: skip
    assert model is not None
    _check_outputs(out, [f"{Path(model).stem}{s}" for s in (".pt2", ".pte", ".aoti.pt2")])
    from migrate.verify.convert_flow import convert_error_json, run_convert

    _warn_trust(trust_archive, model)
    try:
        res = run_convert(
            model,
            inputs,
            list(input_shape or []),
            out,
            backend=backend,
            dynamic_dims=list(dynamic_dim or []),
            debug=debug,
            method=method,
            trust=trust_archive,
            max_input_bytes=max_input_bytes,
            aoti=aoti,
            device=device or "cpu",
            dynamic_batch=dynamic_batch,
        )
    except VerifyError as exc:
        if debug:
            raise
        if fmt == "json":
            typer.echo(json.dumps(convert_error_json(exc), indent=2))
        elif verbose:
            for a in getattr(exc, "attempts", []):
                typer.echo(f"note: {a.step} failed ({a.error}): {a.reason}", err=True)
        raise _fail(exc) from None
    if fmt == "json":
        typer.echo(json.dumps(res.to_json(), indent=2))
    else:
        for line in res.lines(verbose) + (res.timing_lines() if timings else []):
            typer.echo(line)
    if res.mismatch:
        typer.echo(f"mismatch: {res.mismatch}", err=True)
        raise typer.Exit(1)
    if res.pte_error is not None:  # --aoti: the packages were written, the .pte could not be
        raise _fail(res.pte_error)
