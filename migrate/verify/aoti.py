"""AOTInductor packages of exported programs: compiled for one device by
``torch._inductor.aoti_compile_and_package``, run here by ``aoti_load_package`` and in C++ by
``torch::inductor::AOTIModelPackageLoader``.

A package is named ``<stem>[.<method>][.<device>].aoti.pt2``, so that it cannot be taken for
the ExportedProgram ``<stem>.pt2`` (``torch.export.load`` cannot read it, nor the loader an
ExportedProgram). Where one cannot be made (no C++ compiler, an operator that does not
compile) the error names the operator or the compiler's first error line, and the ``.pte``
route that remains.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from migrate.verify import convert as conv
from migrate.verify import runners as rn
from migrate.verify.errors import VerifyError, describe, one_line, quiet

SUFFIX = ".aoti.pt2"
#: The files only an AOTInductor package holds (an ExportedProgram .pt2 has none).
_PACKAGE_MARK = "/data/aotinductor/"
#: The tolerance row of compare.BACKEND_TOLERANCES its outputs are compared with.
BACKEND = "aoti"


def package_name(stem: str, method: str = "forward", device: str = "cpu") -> str:
    """``model.aoti.pt2``; ``model.encode.aoti.pt2`` for a method; ``model.cuda.aoti.pt2`` for
    a package compiled for an accelerator by a run that writes one per device (verify)."""
    parts = [stem]
    if method != "forward":
        parts.append(method)
    kind = device.split(":")[0]
    if kind != "cpu":
        parts.append(kind)
    return ".".join(parts) + SUFFIX


def pte_route(pte: str) -> str:
    """The route that stays open when no package can be made."""
    return (
        f"the .pte route remains: {Path(pte).name} for ExecuTorch's C++ runtime "
        "(executorch::extension::Module; migrate explain MIG401)"
    )


def is_package(path: str | os.PathLike[str]) -> bool:
    """Whether a ``.pt2`` file is an AOTInductor package (read from its zip listing only)."""
    try:
        with zipfile.ZipFile(path) as zf:
            return any(_PACKAGE_MARK in "/" + name for name in zf.namelist())
    except (OSError, zipfile.BadZipFile):
        return False


# --------------------------------------------------------------------------- compiling


def check_compiler(pte: str) -> str:
    """The C++ compiler AOTInductor will call (``CXX``, else g++/clang++ on the path); a
    one-line ``aoti`` error when there is none, before anything is compiled."""
    from torch._inductor import cpp_builder
    from torch._inductor import exc as inductor_exc

    try:
        return str(cpp_builder.get_cpp_compiler())
    except inductor_exc.InvalidCxxCompiler:
        cxx = os.environ.get("CXX")
        which = f"CXX={cxx} is not a working compiler" if cxx else "no g++ or clang++ found"
        raise VerifyError(
            "aoti",
            f"AOTInductor needs a C++ compiler: {which} (install one or set CXX); {pte_route(pte)}",
        ) from None


_OPERATOR = re.compile(r"target: (?P<op>[\w.:]+)")
_COMPILER_ERROR = re.compile(r"(?:^|\s)(?:fatal )?error: .*")


def failure_cause(exc: BaseException, log: str = "") -> str:
    """What stopped a package: the operator Inductor could not lower, or the compiler's first
    error line, else the exception itself."""
    text = f"{exc}\n{log}"
    op = _OPERATOR.search(text)
    if op:
        return f"operator {op['op']} does not compile ({one_line(describe(exc), 120)})"
    for line in text.splitlines():
        m = _COMPILER_ERROR.search(line)
        if m:
            return f"the C++ compiler failed: {one_line(m.group().strip(), 160)}"
    return one_line(describe(exc), 160)


@dataclass
class Package:
    """One compiled package: where it is, what it holds, how long compiling took."""

    path: Path
    method: str
    device: str
    compile_s: float


def compile_package(
    ep: Any,
    dest: Path,
    device: str = "cpu",
    method: str = "forward",
    pte: str = "the .pte",
    debug: bool = False,
    root: Path | None = None,
) -> Package:
    """``ep`` compiled for ``device`` into the package ``dest`` (written whole or not at all,
    inside ``root``). ``pte``: the .pte to name when it cannot be made."""
    check_compiler(pte)
    from torch._inductor import aoti_compile_and_package

    program = ep
    if device != "cpu":
        from torch.export.passes import move_to_device_pass

        program = move_to_device_pass(ep, device)
    start = time.perf_counter()
    # The package's inner folder is named after the file: compile under the final name.
    with tempfile.TemporaryDirectory(prefix="migrate-aoti-") as tmp, quiet(debug) as log:
        staged = Path(tmp) / dest.name
        try:
            aoti_compile_and_package(program, package_path=str(staged))
        except Exception as exc:
            if debug:
                raise
            raise VerifyError(
                "aoti",
                f"no AOTInductor package {dest.name} ({method}, {device}): "
                f"{failure_cause(exc, log.text)}; {pte_route(pte)}",
            ) from exc
        seconds = time.perf_counter() - start
        with conv.output(dest, root) as temp:
            shutil.copyfile(staged, temp)
    return Package(dest, method, device, seconds)


# --------------------------------------------------------------------------- running


def _device_index(device: str) -> int:
    index = torch.device(device).index
    return -1 if index is None else index


class PackageRunner:
    """An AOTInductor package loaded by ``aoti_load_package`` on the device it was built for."""

    def __init__(self, path: Path, device: str) -> None:
        from torch._inductor import aoti_load_package

        self.path = path
        self.device = device
        try:
            self.model = aoti_load_package(str(path), device_index=_device_index(device))
        except Exception as exc:
            raise VerifyError(
                "load", f"cannot load AOTInductor package {path}: {describe(exc)}"
            ) from exc

    def __call__(self, args: tuple[Any, ...]) -> Any:
        with torch.no_grad():
            return self.model(*args)

    def prepare(self, args: tuple[Any, ...]) -> rn.Prepared:
        return rn.Prepared(self.model, tuple(rn.to_device(args, self.device)))

    def loader(self) -> Callable[[], Any]:
        """``aoti_load_package``: unzip, load the compiled library, its weights."""
        from torch._inductor import aoti_load_package

        path, index = str(self.path), _device_index(self.device)
        return lambda: aoti_load_package(path, device_index=index)


@dataclass
class Packages:
    """A method's packages, one per device, compiled when the candidate is built; a device
    whose package failed holds its error (its cell reports it)."""

    built: dict[str, Package] = field(default_factory=dict)
    failed: dict[str, VerifyError] = field(default_factory=dict)

    def runner(self, device: str) -> PackageRunner:
        if device in self.failed:
            raise self.failed[device]
        return PackageRunner(self.built[device].path, device)


def package_candidates(
    programs: dict[str, Any],
    stem: str,
    devices: list[str],
    out_dir: Path,
    artifacts: dict[str, str],
    root: Path | None = None,
    debug: bool = False,
) -> list[rn.Candidate]:
    """``aoti`` (``aoti:<method>``) candidates of verify: each method's program compiled for
    every device of the run, written to ``out_dir``; a package that cannot be made is that
    candidate's error on its device, not the run's end."""
    pte = str(out_dir / f"{stem}.pte")
    out = []
    for method, ep in programs.items():
        suffix = "" if method == "forward" else f":{method}"
        packages = Packages()
        notes = []
        for device in devices:
            name = package_name(stem, method, device)
            try:
                pkg = compile_package(ep, out_dir / name, device, method, pte, debug, root)
            except VerifyError as exc:
                if debug:
                    raise
                packages.failed[device] = exc
                continue
            packages.built[device] = pkg
            artifacts[f"aoti{suffix}" + ("" if device == "cpu" else f"@{device}")] = str(pkg.path)
            notes.append(f"compiled for {device} in {pkg.compile_s:.1f} s")
        out.append(
            rn.Candidate(
                f"aoti{suffix}",
                "aoti",
                "aoti_compile_and_package " + package_name(stem, method),
                backend=BACKEND,
                make=packages.runner,
                ep=ep,
                ep_source="compiled-from",
                method=method,
                notes=notes,
                error=next(iter(packages.failed.values())) if not packages.built else None,
            )
        )
    return out


def file_candidate(path: Path, trust: bool) -> rn.Candidate:
    """A package given with ``--candidate``: it holds native code that runs when loaded, so
    only with ``--trust-archive``."""
    cand = rn.Candidate(path.name, "aoti", str(path), backend=BACKEND)
    if not trust:
        cand.error = VerifyError(
            "audit",
            f"{path} is an AOTInductor package: loading it runs the compiled code it holds "
            "(pass --trust-archive to load it)",
        )
        return cand
    cand.make = lambda d: PackageRunner(path, d)
    return cand


def write_packages(
    result: Any,
    programs: dict[str, Any],
    stem: str,
    out: Path,
    root: Path,
    device: str,
    check: Callable[[rn.Candidate, str], str | None],
    debug: bool = False,
) -> None:
    """convert's ``--aoti``: each method's package compiled for ``device``, checked against
    the archive by ``check(candidate, method)`` (None: it matches, else where it differs) and
    written to ``out`` only when it matches (else ``result.mismatch`` says where it differs).
    Timings join ``result.timings``."""
    pte = str(result.pte) if result.pte is not None else str(out / f"{stem}.pte")
    for method, ep in programs.items():
        name = package_name(stem, method)
        with tempfile.TemporaryDirectory(prefix="migrate-aoti-") as tmp:
            pkg = compile_package(ep, Path(tmp) / name, device, method, pte, debug, Path(tmp))
            _add(result.timings, "aoti compile", pkg.compile_s)
            start = time.perf_counter()
            cand = rn.Candidate(
                name, "aoti", name, backend=BACKEND, make=lambda d, p=pkg.path: PackageRunner(p, d)
            )
            differs = check(cand, method)
            _add(result.timings, "aoti check", time.perf_counter() - start)
            if differs is not None:
                result.mismatch = (
                    f"the AOTInductor package of method {method} ({device}) differs from the "
                    f"archive: {differs}; the package is not written (migrate verify --aoti "
                    "shows the details)"
                )
                return
            dest = out / name
            with conv.output(dest, root) as temp:
                shutil.copyfile(pkg.path, temp)
            result.packages.append(Package(dest, method, device, pkg.compile_s))


def _add(timings: dict[str, float], stage: str, seconds: float) -> None:
    timings[stage] = timings.get(stage, 0.0) + seconds
