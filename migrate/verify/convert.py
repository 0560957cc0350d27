"""TorchScript -> ExportedProgram -> ExecuTorch, with recoveries and named stages."""

from __future__ import annotations

import copy
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from migrate.verify.errors import VerifyError, describe, quiet

BACKENDS = ("xnnpack", "portable")


@dataclass
class Converted:
    """An exported program and how it was obtained."""

    ep: Any
    path: list[str] = field(default_factory=list)

    @property
    def path_label(self) -> str:
        return " -> ".join(self.path)


@dataclass
class Lowered:
    buffer: bytes
    backend: str
    path: str  # which recovery path produced the program
    attempts: list[tuple[str, str]] = field(default_factory=list)  # (path, failure reason)


def _reexport(ep: Any, example: tuple[Any, ...], dynamic_shapes: Any) -> Any:
    return torch.export.export(ep.module(), example, dynamic_shapes=dynamic_shapes, strict=False)


def convert_archive(
    ts: Any, example: tuple[Any, ...], dynamic_shapes: Any = None, debug: bool = False
) -> Converted:
    """TorchScript module -> ExportedProgram via ``TS2EPConverter``.

    When the plain conversion fails, a frozen copy (``torch.jit.freeze``, which
    folds attributes and training-mode branches) is converted instead.  With
    dynamic dimensions the converted program is re-exported with
    ``torch.export.Dim`` ranges (the converter itself only takes sample inputs).
    """
    from torch._export.converter import TS2EPConverter

    path: list[str] = []
    with quiet(debug):
        try:
            ep = TS2EPConverter(ts, tuple(example)).convert()
            path.append("TS2EPConverter")
        except Exception as exc:
            first = describe(exc)
            ep = None
            if not getattr(ts, "training", False):
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        frozen = torch.jit.freeze(ts)
                    ep = TS2EPConverter(frozen, tuple(example)).convert()
                    path.append("torch.jit.freeze + TS2EPConverter")
                except Exception:
                    ep = None
            if ep is None:
                raise VerifyError("convert", f"TS2EPConverter failed: {first}") from exc
        if dynamic_shapes is not None:
            try:
                ep = _reexport(ep, example, dynamic_shapes)
            except Exception as exc:
                raise VerifyError(
                    "export", f"re-export with dynamic dims failed: {describe(exc)}"
                ) from exc
            path.append("re-export with torch.export.Dim")
    return Converted(ep, path)


def export_module(
    module: Any, example: tuple[Any, ...], dynamic_shapes: Any = None, debug: bool = False
) -> Converted:
    """Eager module -> ExportedProgram (``torch.export.export``, non-strict)."""
    with quiet(debug):
        try:
            ep = torch.export.export(
                module, tuple(example), dynamic_shapes=dynamic_shapes, strict=False
            )
        except Exception as exc:
            raise VerifyError("export", f"torch.export.export failed: {describe(exc)}") from exc
    return Converted(ep, ["torch.export.export"])


def _partitioners(backend: str) -> list[Any]:
    if backend == "portable":
        return []
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner

    return [XnnpackPartitioner()]


def _lower_once(ep: Any, backend: str) -> bytes:
    """One program, or a ``{method: program}`` dict lowered into one multi-method ``.pte``."""
    from executorch.exir import to_edge_transform_and_lower

    manager = to_edge_transform_and_lower(ep, partitioner=_partitioners(backend))
    return bytes(manager.to_executorch().buffer)


def lower_methods(programs: dict[str, Any], backend: str, debug: bool = False) -> bytes:
    """Several exported programs -> one ``.pte`` with a method per program."""
    with quiet(debug) as log:
        try:
            return _lower_once({k: copy.deepcopy(v) for k, v in programs.items()}, backend)
        except ImportError as exc:
            raise VerifyError("lower", f"cannot import executorch: {describe(exc)}") from exc
        except Exception as exc:
            native = log.last_line()
            raise VerifyError(
                "lower",
                f"to_edge_transform_and_lower ({backend}) of methods {', '.join(programs)} "
                f"failed: {describe(exc)}" + (f" [{native}]" if native else ""),
            ) from exc


def lower(
    ep: Any,
    example: tuple[Any, ...],
    backend: str = "xnnpack",
    dynamic_shapes: Any = None,
    debug: bool = False,
    lower_fn: Callable[[Any, str], bytes] | None = None,
) -> Lowered:
    """ExportedProgram -> ``.pte`` bytes, trying recoveries before giving up.

    Paths, in order: ``direct`` (lower the program as is); ``re-export`` (export
    ``ep.module()`` again with the same inputs, which drops converter artefacts
    such as data-dependent guards); ``decomposed`` (``run_decompositions()`` to
    core ATen first).  The path used is reported; when all fail, the first
    reason is named.
    """
    if backend not in BACKENDS:
        raise VerifyError("usage", f"unknown backend {backend!r} (choose {', '.join(BACKENDS)})")
    do_lower = lower_fn or _lower_once
    attempts: list[tuple[str, str]] = []
    errors: list[BaseException] = []
    # Lowering mutates the program it is given (constants are moved into the
    # delegate), so every attempt works on a copy and ``ep`` stays runnable.
    plans: list[tuple[str, Callable[[], Any]]] = [
        ("direct", lambda: copy.deepcopy(ep)),
        ("re-export", lambda: _reexport(ep, example, dynamic_shapes)),
        ("decomposed", lambda: _reexport(ep, example, dynamic_shapes).run_decompositions()),
    ]
    with quiet(debug) as log:
        for name, make in plans:
            try:
                program = make()
                buf = do_lower(program, backend)
                return Lowered(buf, backend, name, attempts)
            except ImportError as exc:
                raise VerifyError("lower", f"cannot import executorch: {describe(exc)}") from exc
            except Exception as exc:
                attempts.append((name, describe(exc)))
                errors.append(exc)
    first = attempts[0][1] if attempts else "unknown"
    tried = ", ".join(a for a, _ in attempts[1:])
    native = log.last_line()
    msg = f"to_edge_transform_and_lower ({backend}) failed: {first}"
    if tried:
        msg += f" (also tried: {tried})"
    if native and native not in msg:
        msg += f" [{native}]"
    raise VerifyError("lower", msg) from (errors[0] if errors else None)


def save_pt2(ep: Any, path: Path) -> Path:
    try:
        torch.export.save(ep, str(path))
    except Exception as exc:
        raise VerifyError("export", f"torch.export.save failed: {describe(exc)}") from exc
    return path


def save_pte(lowered: Lowered | bytes, path: Path) -> Path:
    path.write_bytes(lowered if isinstance(lowered, bytes) else lowered.buffer)
    return path
