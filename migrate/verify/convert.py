"""TorchScript -> ExportedProgram -> ExecuTorch, with recoveries and named stages."""

from __future__ import annotations

import contextlib
import copy
import functools
import io
import re
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from migrate.safe_write import UnsafeOutput, make_folder, replacing
from migrate.verify.errors import VerifyError, describe, quiet
from migrate.verify.options import BACKENDS


@dataclass
class Converted:
    """An exported program and how it was obtained."""

    ep: Any
    path: list[str] = field(default_factory=list)

    @property
    def path_label(self) -> str:
        return " -> ".join(self.path)


class Archive:
    """A TorchScript archive kept as bytes, loaded afresh for each conversion attempt.

    The converter changes the module it is given (it rewrites ``forward``'s graph and
    its parameters' holders), so an attempt after a failed one must not reuse that
    object: every :meth:`fresh` is a new load, and the caller's module is never touched.
    """

    def __init__(self, ts: Any = None, data: bytes | None = None) -> None:
        if data is None:
            buf = io.BytesIO()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                torch.jit.save(ts, buf)
            data = buf.getvalue()
        self.data = data
        self.training = bool(getattr(ts, "training", False))
        self._source = ts  # only read, for control_flow
        self.loads = 0  # how many fresh copies were handed out
        self.load_s = 0.0  # seconds those loads took

    @functools.cached_property
    def control_flow(self) -> bool:
        """Freezing helps the converter with branches and loops (it folds the attributes
        that decide them); a graph without them (any trace) fails the same way frozen.
        Read only when the first conversion failed (inlining a large graph is not free)."""
        return True if self._source is None else _has_control_flow(self._source)

    def fresh(self) -> Any:
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ts = torch.jit.load(io.BytesIO(self.data), map_location="cpu")
        self.loads += 1
        self.load_s += time.perf_counter() - start
        return ts


def _has_control_flow(ts: Any) -> bool:
    try:
        graph = ts.forward.inlined_graph
    except Exception:  # no forward, or an exotic archive: assume it has some
        return True
    return any(graph.findAllNodes(kind, True) for kind in ("prim::If", "prim::Loop"))


@dataclass(frozen=True)
class Attempt:
    """One failed step: its name, the full reason and the error's class."""

    step: str
    reason: str
    error: str
    why: str = ""  # why the ladder chose this step (the error class that led to it)

    def __iter__(self) -> Any:  # ``for step, reason in attempts``
        yield self.step
        yield self.reason

    def summary(self) -> str:
        return f"{self.step}: {self.error}"


_CAUSE = re.compile(r"\s*([A-Za-z_][\w.]*(?:Error|Exception|Violation\w*)): ")


def attempt(step: str, exc: BaseException, prefix: str = "", why: str = "") -> Attempt:
    """The attempt ``exc`` ended, with the whole text of the error (never cut)."""
    text = str(exc).strip()
    error = type(exc).__name__
    if isinstance(exc, VerifyError) and exc.__cause__ is not None:
        return attempt(step, exc.__cause__, prefix, why)
    if text.startswith("The following operation failed in the TorchScript interpreter"):
        causes = [m.group(1) for m in map(_CAUSE.match, text.splitlines()) if m]
        if causes:
            error = causes[-1].rsplit(".", 1)[-1]
    reason = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    return Attempt(step, prefix + reason, error, why)


#: The converter's own parameter listing disagrees with the graph's inputs (scripted ViT/DeiT).
PARAM_COUNT = "parameter-count assert"
#: A size read from a tensor became an unbacked symbol that a later pass guards on.
UNBACKED = "unbacked symbol"


def error_class(reason: str) -> str | None:
    """The class of failure that picks the ladder's next rung (None: no dedicated rung)."""
    if "param_count_list.size()" in reason:
        return PARAM_COUNT
    if "GuardOnDataDependentSymNode" in reason or "data-dependent expression" in reason:
        return UNBACKED
    return None


@dataclass
class Lowered:
    buffer: bytes
    backend: str
    path: str  # which recovery path produced the program
    attempts: list[tuple[str, str]] = field(default_factory=list)  # (path, failure reason)


def _reexport(ep: Any, example: tuple[Any, ...], dynamic_shapes: Any) -> Any:
    return torch.export.export(ep.module(), example, dynamic_shapes=dynamic_shapes, strict=False)


def convert_archive(
    ts: Any,
    example: tuple[Any, ...],
    dynamic_shapes: Any = None,
    debug: bool = False,
    attempts: list[Attempt] | None = None,
) -> Converted:
    """TorchScript module (or :class:`Archive`) -> ExportedProgram via ``TS2EPConverter``.

    When the plain conversion fails, a frozen copy (``torch.jit.freeze``, which
    folds attributes and training-mode branches) of a fresh load is converted
    instead, unless the graph has no branch or loop to fold or the failure is the
    parameter-count assert (both fail the same way frozen).  With dynamic dimensions the converted program is re-exported with
    ``torch.export.Dim`` ranges (the converter itself only takes sample inputs).
    Each conversion gets its own load, so ``ts`` is left as it was; the failed
    tries are appended to ``attempts`` with their full reasons.
    """
    from torch._export.converter import TS2EPConverter

    archive = ts if isinstance(ts, Archive) else Archive(ts)
    tried: list[Attempt] = [] if attempts is None else attempts
    path: list[str] = []
    with quiet(debug):
        try:
            ep = TS2EPConverter(archive.fresh(), tuple(example)).convert()
            path.append("TS2EPConverter")
        except Exception as exc:
            first = exc
            tried.append(attempt("converter", exc))
            ep = None
            # freeze keeps the parameters the converter lists: the same assert again.
            if (
                not archive.training
                and archive.control_flow
                and error_class(tried[-1].reason) != PARAM_COUNT
            ):
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        frozen = torch.jit.freeze(archive.fresh())
                    ep = TS2EPConverter(frozen, tuple(example)).convert()
                    path.append("torch.jit.freeze + TS2EPConverter")
                except Exception as exc2:
                    tried.append(attempt("converter (frozen)", exc2))
                    ep = None
            if ep is None:
                raise VerifyError("convert", f"TS2EPConverter failed: {describe(first)}") from first
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


def core_ops(ep: Any) -> Any:
    """``ep`` with the non-core ops TorchScript records rewritten to their core forms, in place.

    The TorchScript interpreter calls ``aten::_convolution`` (traced convolutions), which
    a re-captured program keeps and which no lowering accepts (it is not core ATen);
    ``aten.convolution`` computes the same from its first nine arguments (the rest only
    select cuDNN/benchmark modes).  Rewriting the node is cheaper than a
    ``run_decompositions`` pass over the whole program.
    """
    for program in ep.values() if isinstance(ep, dict) else [ep]:
        gm = program.graph_module
        changed = False
        for module in gm.modules():
            graph = getattr(module, "graph", None)
            if not isinstance(graph, torch.fx.Graph):
                continue
            for node in graph.nodes:
                if (
                    node.op == "call_function"
                    and node.target is torch.ops.aten._convolution.default
                ):
                    node.target = torch.ops.aten.convolution.default
                    node.args = tuple(node.args[:9])
                    node.kwargs = {}
                    changed = True
        if changed:
            gm.recompile()
    return ep


def _lower_once(ep: Any, backend: str) -> bytes:
    """One program, or a ``{method: program}`` dict lowered into one multi-method ``.pte``."""
    from executorch.exir import to_edge_transform_and_lower

    core_ops(ep)
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
    # One re-export serves the re-export and decomposed paths.
    again: list[Any] = []

    def reexported() -> Any:
        if not again:
            again.append(_reexport(ep, example, dynamic_shapes))
        return again[0]

    plans: list[tuple[str, Callable[[], Any]]] = [
        ("direct", lambda: copy.deepcopy(ep)),
        ("re-export", lambda: copy.deepcopy(reexported())),
        ("decomposed", lambda: reexported().run_decompositions()),
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


def make_output_folder(folder: Path, root: Path) -> None:
    """The artifacts' folder, created inside the chosen output folder only."""
    try:
        make_folder(folder, root)
    except UnsafeOutput as exc:
        raise VerifyError("output", str(exc)) from None


@contextlib.contextmanager
def output(path: Path, root: Path | None = None) -> Iterator[Path]:
    """A temp path to write `path` through (migrate.safe_write.replacing): renamed over it
    once written, never through a symlink nor out of `root`, the chosen output folder."""
    try:
        with replacing(path, root) as temp:
            yield temp
    except UnsafeOutput as exc:
        raise VerifyError("output", str(exc)) from None


def save_pt2(ep: Any, path: Path, root: Path | None = None) -> Path:
    with output(path, root) as temp:
        try:
            torch.export.save(ep, str(temp))
        except Exception as exc:
            raise VerifyError("export", f"torch.export.save failed: {describe(exc)}") from exc
    return path


def save_pte(lowered: Lowered | bytes, path: Path, root: Path | None = None) -> Path:
    with output(path, root) as temp:
        temp.write_bytes(lowered if isinstance(lowered, bytes) else lowered.buffer)
    return path
