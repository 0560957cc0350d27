"""`migrate verify --branches`: cover both sides of every data-dependent condition and catch a
TorchScript reference that froze one (issue 7).

The library (`migrate.verify.branches`) finds the conditions of the eager module's forward,
records which side each sample takes, and compares a TorchScript module with the eager one.
This module wires it into the verify pipeline: it finds the eager module and its source for
the target, adds the samples that take the sides the ordinary samples miss (so every
candidate is compared on both branches), and turns a reference that disagrees with eager
into a failed check.
"""

from __future__ import annotations

import importlib
import inspect
import os
import sys
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from torch import nn

from migrate.verify import branches as br
from migrate.verify.compare import json_float
from migrate.verify.errors import VerifyError, describe
from migrate.verify.inputs import Sample

#: Seeded random bases for the search; each gives 6 variants (as is, negated, |x|, -|x|,
#: x10, x0.1), after the example and an all-zeros input.
SEARCH_BASES = 32

NEEDS_SOURCE = "--branches needs the module's Python source"


@dataclass
class BranchCheck:
    """The `branches` part of a verify report."""

    module: str  # qualified class name of the eager module, e.g. "pkg.mod.Gate"
    source: str | None  # the file its forward was read from
    reference: str  # how the TorchScript reference was made: trace | script | archive
    conditions: list[br.BranchCoverage] = field(default_factory=list)
    samples_searched: int = 0
    added: list[str] = field(default_factory=list)  # samples added to the comparison
    trace: br.TraceReport | None = None
    error: str | None = None  # the search could not run (probe not built)

    @property
    def frozen(self) -> bool:
        return self.trace is not None and self.trace.frozen

    @property
    def complete(self) -> bool:
        return self.error is None and all(c.covered for c in self.conditions)

    @property
    def status(self) -> str:
        if self.frozen:
            return "fail"
        if self.error:
            return "error"
        return "pass"

    def uncovered(self) -> list[str]:
        return [c.message() for c in self.conditions if not c.covered]

    def to_json(self) -> dict[str, Any]:
        def side(cov: br.BranchCoverage, hits: list[str]) -> dict[str, Any]:
            return {"covered": bool(hits), "samples": list(hits)}

        trace = None
        if self.trace is not None:
            trace = {
                "samples_checked": self.trace.samples_checked,
                "agrees": not self.trace.frozen,
                "mismatches": [
                    {
                        "sample": m.sample,
                        "max_abs": json_float(m.max_abs_diff),
                        "flipped": [
                            {
                                "condition": _cond_json(c),
                                "reference_side": was,
                                "sample_side": now,
                            }
                            for c, was, now in m.flipped
                        ],
                        "message": m.message(),
                    }
                    for m in self.trace.mismatches
                ],
                "error": self.trace.error,
            }
        return {
            "status": self.status,
            "module": self.module,
            "source": self.source,
            "reference": self.reference,
            "complete": self.complete,
            "samples_searched": self.samples_searched,
            "samples_added": list(self.added),
            "conditions": [
                {
                    **_cond_json(c.condition),
                    "reached": c.reached,
                    "true": side(c, c.true_samples),
                    "false": side(c, c.false_samples),
                    "message": c.message(),
                }
                for c in self.conditions
            ],
            "trace": trace,
            "error": self.error,
        }


def _cond_json(c: br.BranchCondition) -> dict[str, Any]:
    return {
        "function": c.function,
        "line": c.line,
        "condition": c.condition,
        "kind": c.kind,
        "fix": c.fix,
        "reason": c.reason,
    }


# --------------------------------------------------------------------------- the eager module


def _class_name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _import_class(parts: list[str]) -> type | None:
    """The class named by the longest importable module prefix of `parts` plus attributes."""
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    for cut in range(len(parts) - 1, 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        except Exception:  # the module exists but fails to import
            return None
        for attr in parts[cut:]:
            obj = getattr(obj, attr, None)
            if obj is None:
                return None
        return obj if isinstance(obj, type) else None
    return None


def eager_for_archive(ts: Any) -> nn.Module:
    """Rebuild the eager module of a TorchScript archive from its Python class.

    The archive records the class's qualified name (`__torch__.pkg.mod.Gate`); when that
    module imports, the class builds without arguments and the archive's parameters and
    buffers load into it, the result computes what the archive was made from.
    """
    try:
        qual = ts._c._type().qualified_name()
    except Exception as exc:  # pragma: no cover - exotic archives
        raise VerifyError("usage", f"{NEEDS_SOURCE}: the archive names no class ({exc})") from exc
    parts = [p for p in qual.split(".") if not p.startswith("___torch_mangle")]
    if parts and parts[0] == "__torch__":
        parts = parts[1:]
    name = ".".join(parts)
    hint = "; pass the package.module:callable that builds it as the target instead"
    if len(parts) < 2:
        raise VerifyError(
            "usage",
            f"{NEEDS_SOURCE}: the archive's class {name} was defined in a script "
            f"(__main__), not in an importable module{hint}",
        )
    cls = _import_class(parts)
    if cls is None or not issubclass(cls, nn.Module):
        raise VerifyError(
            "usage",
            f"{NEEDS_SOURCE}: the archive's class {name} cannot be imported from the "
            f"current directory or PYTHONPATH{hint}",
        )
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            module = cls()
    except Exception as exc:
        raise VerifyError(
            "usage", f"{NEEDS_SOURCE}: {name}() cannot be built: {describe(exc)}{hint}"
        ) from exc
    try:
        module.load_state_dict(ts.state_dict(), strict=True)
    except Exception as exc:
        raise VerifyError(
            "usage",
            f"{NEEDS_SOURCE}: the parameters of {name} no longer match the archive's "
            f"({describe(exc).splitlines()[0]}){hint}",
        ) from exc
    module.train(bool(ts.training))
    for sub_name, sub in ts.named_modules():
        try:
            module.get_submodule(sub_name).train(bool(sub.training))
        except Exception:
            pass
    return module


def _source(module: nn.Module) -> tuple[str, str | None]:
    """The text and path of the file defining the module's class."""
    try:
        text = br._source_of(module)
    except (OSError, TypeError) as exc:
        raise VerifyError(
            "usage",
            f"{NEEDS_SOURCE}: the source of {_class_name(type(module))} is not available "
            f"({describe(exc)})",
        ) from exc
    try:
        path = inspect.getsourcefile(type(module))
    except TypeError:
        path = None
    return text, path


# --------------------------------------------------------------------------- the check


def _search_items(samples: list[Sample], example: tuple[Any, ...], seed: int) -> Iterator[Sample]:
    """The ordinary samples first (nothing is added when they already cover a side), then the
    branch search's variants not among them."""
    seen = {s.name for s in samples}
    yield from samples
    for s in br.branch_samples(example, SEARCH_BASES, seed):
        if s.name not in seen:
            yield s


def run_branch_check(
    module: nn.Module,
    reference: Any,
    reference_kind: str,
    example: tuple[Any, ...],
    samples: list[Sample],
    seed: int,
    rtol: float | None,
    atol: float | None,
) -> tuple[BranchCheck, list[Sample]]:
    """Search, then return the check and the samples to add to the comparison."""
    text, path = _source(module)
    try:
        conditions = br.find_conditions(module, text)
    except SyntaxError as exc:
        raise VerifyError(
            "usage", f"{NEEDS_SOURCE}: {path or 'its file'} does not parse ({exc})"
        ) from exc
    check = BranchCheck(_class_name(type(module)), path, reference_kind)
    added: list[Sample] = []
    if conditions:
        found = br.search_branches(
            module,
            example,
            _search_items(samples, example, seed),
            conditions=conditions,
            source=text,
            keep=1,
        )
        check.conditions = found.conditions
        check.samples_searched = found.samples_tried
        check.error = found.error
        have = {s.name for s in samples}
        covers: dict[str, list[dict[str, Any]]] = {}
        for cov in found.conditions:
            for side, hits in ((True, cov.true_samples), (False, cov.false_samples)):
                for name in hits[:1]:
                    if name not in have:
                        covers.setdefault(name, []).append(
                            {"condition": str(cov.condition), "side": side}
                        )
        if covers:
            for s in br.branch_samples(example, SEARCH_BASES, seed):
                if s.name in covers:
                    added.append(Sample(s.name, s.args, {**s.meta, "covers": covers[s.name]}))
                    if len(added) == len(covers):
                        break
        check.added = [s.name for s in added]
    check.trace = br.check_trace(
        module,
        example,
        [*samples, *added],
        traced=reference,
        conditions=conditions,
        source=text,
        rtol=1e-4 if rtol is None else rtol,
        atol=1e-5 if atol is None else atol,
    )
    return check, added


def export_hint(check: BranchCheck | None) -> str:
    """Put before an export failure when forward holds data-dependent conditions."""
    if check is None or not check.conditions:
        return ""
    names = ", ".join(str(c.condition) for c in check.conditions[:2])
    return (
        f"forward has data-dependent conditions ({names}): torch.export needs them as "
        f"torch.cond, which `migrate apply` writes (MIG131); verify the migrated model with "
        f"--candidate. "
    )
