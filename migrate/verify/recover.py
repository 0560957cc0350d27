"""The recovery ladder: TorchScript archive -> an exported program that lowers to ExecuTorch.

Steps, each tried only when the previous one failed (to convert, to match the
archive on the samples, or to lower), the one used is named in the report. Every
step that reads the archive gets its own fresh load (:class:`convert.Archive`):
the converter changes the module it is given, and a later step must not start
from what a failed one left behind.

1. ``converter``: ``TS2EPConverter`` (forward only; a frozen copy when the plain
   archive fails);
2. ``converter + scalar specialisation``: the converter turns shape arithmetic of
   traced archives (``x.size(1) + 0``) into tensors read back with
   ``aten._local_scalar_dense``/``aten.item``, whose unbacked symbols lowering
   cannot guard on. When such a scalar derives only from shapes and constants,
   its value at the example is substituted and the program re-exported;
3. ``freeze + re-capture``: ``torch.jit.freeze`` of the archive called from a plain
   module, exported non-strict: the TorchScript interpreter's aten calls are
   captured, loops unrolled and ``if`` sides chosen at the example (+ step 2 when
   scalars remain);
4. ``decompositions``: the programs above re-exported, then decomposed to core ATen.

What a step fixes to the example is :mod:`migrate.verify.specialisation`; the re-capture is
:mod:`migrate.verify.recapture`.
"""

from __future__ import annotations

import contextlib
import copy
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from migrate.verify import convert as conv
from migrate.verify.convert import Archive, Attempt, attempt
from migrate.verify.errors import VerifyError, describe, one_line, quiet
from migrate.verify.recapture import control_flow, freeze, recapture, recapture_unfrozen
from migrate.verify.specialisation import (
    NotShapeDerived,
    convert_sizes_fixed,
    input_assumptions,
    scalar_nodes,
    specialise_scalars,
)

CONVERTER = "converter"
CONVERTER_SPEC = "converter + scalar specialisation"
CONVERTER_SIZES = "trace sizes as constants + converter"
RECAPTURE = "freeze + re-capture"
RECAPTURE_SPEC = "freeze + re-capture + scalar specialisation"
RECAPTURE_BUFFERS = "re-capture, parameters as buffers"

#: Why each rung chosen by an error class was tried (the JSON's ``why``, the notes).
WHY_SIZES = (
    "chosen for unbacked symbols: the trace read sizes from tensors (aten::size -> "
    "prim::NumToTensor), which the converter turns into values read back at run time; "
    "they are fixed to the example's before conversion"
)
WHY_SCALARS = (
    "chosen for unbacked symbols: the converted program reads {n} scalar(s) back "
    "(aten._local_scalar_dense), which lowering cannot guard on; fixed before lowering"
)
WHY_PARAMS = (
    "chosen for the converter's parameter-count assert: its own parameter listing "
    "disagrees with the graph (a frozen copy fails the same way); a re-capture through "
    "the dispatcher lists no parameters"
)
WHY_BUFFERS = (
    "chosen because freezing failed: the archive's forward, unfrozen, runs under "
    "torch.export non-strict with its parameters read as constant buffers"
)


@dataclass
class Recovery:
    """What the ladder produced for one method."""

    method: str
    ep: Any  # the exported program compared with the archive
    path: str  # the ladder step that produced it
    lower_path: str | None = None  # direct | re-export | decomposed
    buffer: bytes | None = None  # lowered alone (None when lowering failed or was deferred)
    program: Any = None  # the program that lowered (ep, or its re-export/decomposition)
    lower_error: VerifyError | None = None
    attempts: list[Attempt] = field(default_factory=list)  # the steps that failed, in order
    specialised: list[str] = field(default_factory=list)  # what now holds for the example only
    vary_scalars: bool = False  # Python scalar inputs were baked in: vary them in the samples
    lower_s: float | None = None  # seconds the successful lowering took
    detail: str = ""  # how the step went (the converter's own path)
    timings: dict[str, float] = field(default_factory=dict)  # seconds per ladder stage
    why: str = ""  # why the ladder chose this step (empty: the plain converter)

    def to_json(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "path": self.path,
            "why": self.why,
            "lowering": self.lower_path,
            "attempts": [attempt_json(a) for a in self.attempts],
            "specialised": self.specialised,
            "lower_s": None if self.lower_s is None else round(self.lower_s, 2),
            "timings": {k: round(v, 3) for k, v in self.timings.items()},
        }


def attempt_json(a: Attempt) -> dict[str, Any]:
    """One tried step for the JSON: its one-line error, why it was chosen, the full reason."""
    return {
        "step": a.step,
        "error": a.error,
        "line": one_line(a.reason),
        "why": a.why,
        "reason": a.reason,
    }


# --------------------------------------------------------------------------- ladder


def _defaulted(ts: Any, method: str, example: tuple[Any, ...]) -> list[str]:
    """The method's arguments past the example's, each taking its default."""
    try:
        args = getattr(ts, method).schema.arguments[1 + len(example) :]
    except Exception:  # pragma: no cover - exotic archives
        return []
    return [a.name for a in args]


Check = Callable[[Any], str | None]  # None: matches the archive on every sample
LowerOnce = Callable[[Any], bytes]


def _try(what: str, fn: Callable[[], Any], attempts: list[Attempt], why: str = "") -> Any:
    try:
        return fn()
    except NotShapeDerived as exc:
        attempts.append(Attempt(what, f"refused: {exc}", "refused", why))
    except Exception as exc:
        attempts.append(attempt(what, exc, why=why))
    return None


@contextlib.contextmanager
def _timed(timings: dict[str, float], stage: str) -> Iterator[None]:
    start = time.perf_counter()
    try:
        yield
    finally:
        timings[stage] = timings.get(stage, 0.0) + time.perf_counter() - start


#: The longest summary a VerifyError line keeps whole (errors.one_line's limit).
_LINE = 300


def summary(head: str, attempts: list[Attempt], lead: Attempt | None = None) -> str:
    """``head: step: ErrorClass; ...`` on one line that is never cut inside a reason: the
    first line of ``lead``'s reason is added only when it fits whole."""
    text = f"{head}: " + ("; ".join(a.summary() for a in attempts) or "no step applied")
    if lead is not None:
        first = one_line(lead.reason, _LINE)
        if not first.endswith("...") and len(text) + len(first) + 4 <= _LINE:
            text += f" [{first}]"
    tail = "; --verbose shows every reason"
    return text + tail if len(text + tail) <= _LINE else text


def ladder_error(stage: str, message: str, attempts: list[Attempt]) -> VerifyError:
    """A VerifyError that carries the attempts (``--verbose`` prints their full reasons)."""
    err = VerifyError(stage, message)
    err.attempts = list(attempts)  # type: ignore[attr-defined]
    return err


def run_ladder(
    ts: Any,
    method: str,
    methods: list[str],
    example: tuple[Any, ...],
    check: Check,
    lower_once: LowerOnce | None,
    dynamic_shapes: Any = None,
    debug: bool = False,
    archive: Archive | None = None,
) -> Recovery:
    """Walk the ladder for one method; ``lower_once`` None: stop at the first matching program.

    ``ts`` is only read (its schema); each step that converts loads its own copy from
    ``archive`` (a snapshot of ``ts`` when not given).
    """
    attempts: list[Attempt] = []
    timings: dict[str, float] = {}
    if archive is None:
        archive = Archive(ts)
    found: list[Recovery] = []  # programs that matched the archive, in ladder order
    first_converted: Recovery | None = None

    def lowered(rec: Recovery) -> bool:
        if lower_once is None:
            return True
        try:
            start = time.perf_counter()
            with quiet(debug), _timed(timings, "lower"):
                rec.buffer = lower_once(copy.deepcopy(rec.ep))
            rec.lower_s = time.perf_counter() - start
            rec.lower_path, rec.program = "direct", rec.ep
            return True
        except ImportError as exc:
            raise VerifyError("lower", f"cannot import executorch: {describe(exc)}") from exc
        except Exception as exc:
            attempts.append(attempt(f"{rec.path}: lower", exc))
            return False

    def accept(rec: Recovery) -> bool:
        nonlocal first_converted
        if first_converted is None:
            first_converted = rec
        with _timed(timings, "check"):
            why = check(rec.ep)
        if why is not None:
            attempts.append(Attempt(rec.path, why, "mismatch"))
            return False
        found.append(rec)
        return lowered(rec)

    def finish(rec: Recovery) -> Recovery:
        rec.attempts = attempts
        rec.timings = timings
        return rec

    def specialised_step(ep: Any, path: str, notes: list[str], why: str = "") -> Recovery | None:
        with _timed(timings, "scalar specialisation"):
            result = _try(
                path,
                lambda: specialise_scalars(ep, example, dynamic_shapes, names),
                attempts,
                why,
            )
        if result is None:
            return None
        new, spec = result
        return Recovery(
            method, new, path, specialised=[*notes, spec.describe()], vary_scalars=True, why=why
        )

    try:
        names = [a.name for a in getattr(ts, method).schema.arguments[1:]]
    except Exception:  # pragma: no cover - exotic archives
        names = []

    def sizes_step(why: str) -> Recovery | None:
        """Rung 2b: the trace's size reads fixed before conversion (forward only)."""
        if method != "forward" or any(a.step == CONVERTER_SIZES for a in attempts):
            return None
        with _timed(timings, CONVERTER_SIZES):
            try:
                ep, note = convert_sizes_fixed(archive, example, dynamic_shapes)
            except NotShapeDerived as exc:
                attempts.append(Attempt(CONVERTER_SIZES, f"refused: {exc}", "refused", why))
                return None
            except Exception as exc:
                attempts.append(attempt(CONVERTER_SIZES, exc, why=why))
                return None
        return Recovery(method, ep, CONVERTER_SIZES, specialised=[note], why=why)

    def unbacked_failure() -> bool:
        return bool(attempts) and conv.error_class(attempts[-1].reason) == conv.UNBACKED

    with quiet(debug):
        # 1-2: the converter (forward only).
        converted = None
        if method == "forward":
            with _timed(timings, CONVERTER):
                try:
                    converted = conv.convert_archive(
                        archive, example, dynamic_shapes, debug, attempts
                    )
                except VerifyError as exc:  # "convert" failures are in attempts already
                    if exc.stage != "convert":
                        attempts.append(attempt(f"{CONVERTER}: re-export", exc))
        if converted is not None:
            ep1 = converted.ep
            rec = Recovery(method, ep1, CONVERTER, detail=converted.path_label)
            scalars = scalar_nodes(ep1.module())
            if scalars:
                # Unbacked symbols: lowering would guard on them and fail after paying
                # for most of its work, so the specialised programs are lowered first.
                first_converted = rec
                why = WHY_SCALARS.format(n=len(scalars))
                rec2 = specialised_step(ep1, CONVERTER_SPEC, [], why)
                if rec2 is not None and accept(rec2):
                    return finish(rec2)
                rec2 = sizes_step(WHY_SIZES)
                if rec2 is not None and accept(rec2):
                    return finish(rec2)
            if accept(rec):
                return finish(rec)
            if unbacked_failure():
                rec2 = sizes_step(WHY_SIZES)
                if rec2 is not None and accept(rec2):
                    return finish(rec2)
        elif unbacked_failure():
            rec2 = sizes_step(WHY_SIZES)
            if rec2 is not None and accept(rec2):
                return finish(rec2)
        # 3: freeze + re-capture through the dispatcher.
        params = any(conv.error_class(a.reason) == conv.PARAM_COUNT for a in attempts)
        defaulted = _defaulted(ts, method, example)
        why3 = ""
        if params:
            why3 = WHY_PARAMS + (
                f" ({method} declares {', '.join(defaulted)} beyond the example's inputs, "
                "which the converter counts)"
                if defaulted
                else ""
            )
        with _timed(timings, RECAPTURE):
            frozen = _try(
                RECAPTURE,
                lambda: freeze(archive.fresh(), methods, copy_first=False),
                attempts,
                why3,
            )
            ep3 = (
                None
                if frozen is None
                else _try(
                    RECAPTURE,
                    lambda: recapture(frozen, method, example, dynamic_shapes),
                    attempts,
                    why3,
                )
            )
        if ep3 is not None:
            flow = control_flow(frozen, method)
            dynamic = {
                (i, d)
                for i, spec in enumerate(dynamic_shapes or ())
                if isinstance(spec, dict)
                for d in spec
            }
            fixed = input_assumptions(ts, method, example, dynamic)
            if fixed:
                flow.append("inputs fixed to the example's: " + ", ".join(fixed))
            if defaulted:
                flow.append(f"{', '.join(defaulted)} left at their defaults")
            if getattr(ts, "training", False):
                flow.append("captured in eval mode (the archive is in training mode)")
            rec3 = Recovery(method, ep3, RECAPTURE, specialised=flow, vary_scalars=True, why=why3)
            if scalar_nodes(ep3.module()):
                rec3 = specialised_step(ep3, RECAPTURE_SPEC, flow, why3) or rec3
            if accept(rec3):
                return finish(rec3)
        elif frozen is None:
            # 3b: freezing failed; the unfrozen archive under non-strict export.
            with _timed(timings, RECAPTURE_BUFFERS):
                ep3 = _try(
                    RECAPTURE_BUFFERS,
                    lambda: recapture_unfrozen(archive.fresh(), method, example, dynamic_shapes),
                    attempts,
                    WHY_BUFFERS,
                )
            if ep3 is not None:
                fixed = input_assumptions(ts, method, example, set())
                notes = ["inputs fixed to the example's: " + ", ".join(fixed)] if fixed else []
                if defaulted:
                    notes.append(f"{', '.join(defaulted)} left at their defaults")
                rec3 = Recovery(
                    method, ep3, RECAPTURE_BUFFERS, specialised=notes, vary_scalars=True,
                    why=WHY_BUFFERS,
                )  # fmt: skip
                if accept(rec3):
                    return finish(rec3)
        # 4: decompositions of whatever matched.
        if lower_once is not None:
            for rec in found:
                # One re-export serves both paths (lowering works on a copy of it).
                with _timed(timings, "re-export"):
                    base = _try(
                        f"{rec.path}: re-export",
                        lambda r=rec: conv._reexport(r.ep, example, dynamic_shapes),
                        attempts,
                    )
                if base is None:
                    continue
                for name, make in (
                    ("re-export", lambda b=base: copy.deepcopy(b)),
                    ("decomposed", lambda b=base: b.run_decompositions()),
                ):
                    with _timed(timings, name):
                        program = _try(f"{rec.path}: {name}", make, attempts)
                    if program is None:
                        continue
                    start = time.perf_counter()
                    try:
                        with _timed(timings, "lower"):
                            rec.buffer = lower_once(program)
                        rec.lower_s = time.perf_counter() - start
                    except Exception as exc:
                        attempts.append(attempt(f"{rec.path}: {name}: lower", exc))
                        continue
                    rec.lower_path, rec.program = name, program
                    return finish(rec)
    best = found[0] if found else first_converted
    if best is None:
        raise ladder_error(
            "convert",
            summary(f"no recovery converted {method}", attempts, attempts[0] if attempts else None),
            attempts,
        )
    lower_fail = [a for a in attempts if a.step.endswith("lower")]
    head = "to_edge_transform_and_lower failed on every path"
    if not lower_fail:
        head += ": no program matched the archive"
    best.lower_error = ladder_error(
        "lower", summary(head, attempts, lower_fail[0] if lower_fail else None), attempts
    )
    return finish(best)


def lower_once_for(backend: str, method: str = "forward") -> LowerOnce:
    """Lower one program; a method other than forward keeps its name in the ``.pte``."""
    if method == "forward":
        return lambda program: conv._lower_once(program, backend)
    return lambda program: conv._lower_once({method: program}, backend)


def edge_once(program: Any) -> bytes:
    """A cheaper lowering check for methods lowered together later: ``to_edge`` only."""
    from executorch.exir import to_edge

    to_edge(program)
    return b""


def entry_methods(ts: Any) -> list[str]:
    """``forward`` and the methods no other method calls (those marked ``@torch.jit.export``).

    Helpers that ``forward`` calls are compiled into the archive too; they are
    reached through their callers and are not methods of their own.
    """
    try:
        names = [n for n in ts._c._method_names() if not n.startswith("__")]
    except Exception:
        return ["forward"]
    called: set[str] = set()
    for name in names:
        graph = getattr(ts, name).graph
        me = next(iter(graph.inputs()), None)
        for node in graph.findAllNodes("prim::CallMethod", True):
            inputs = list(node.inputs())
            if inputs and inputs[0] is me:
                called.add(node.s("name"))
    extra = [n for n in names if n != "forward" and n not in called]
    return ["forward", *extra] if "forward" in names else extra
