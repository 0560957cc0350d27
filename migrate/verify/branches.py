"""Data-dependent branches of a module's forward: which samples take each side, and whether a
TorchScript trace froze one side (issue 7; `migrate verify --branches` builds on this).

The conditions come from the MIG131 analysis of the module's source. Which side a sample
takes is recorded by running a probed copy of forward (and of the helpers it calls): each
condition `c` becomes `_migrate_probe(k, c)`, which notes `bool(c)` and returns `c`. The
copy shares the module's parameters and submodules, so it computes exactly what forward does.
"""

from __future__ import annotations

import ast
import copy
import inspect
import linecache
import textwrap
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from migrate.verify.inputs import Sample

__all__ = [
    "BranchCondition",
    "BranchCoverage",
    "BranchReport",
    "TraceMismatch",
    "TraceReport",
    "branch_samples",
    "check_trace",
    "find_conditions",
    "search_branches",
]


@dataclass(frozen=True)
class BranchCondition:
    """One data-dependent condition found by MIG131 in forward or a helper it calls."""

    function: str  # "Gate.forward", "squash"
    line: int  # in the module's source file
    condition: str  # source text of the test
    kind: str  # if | elif | while | ternary
    fix: str  # auto | assisted (how `migrate apply` handles it)
    reason: str | None = None  # why it is not rewritten automatically

    def __str__(self) -> str:
        return f"{self.function}:{self.line} `{self.condition}`"


@dataclass
class BranchCoverage:
    condition: BranchCondition
    true_samples: list[str] = field(default_factory=list)
    false_samples: list[str] = field(default_factory=list)
    reached: bool = False  # whether any sample evaluated the condition at all

    @property
    def missing(self) -> list[bool]:
        """The sides no sample took."""
        return [
            side
            for side, hits in ((True, self.true_samples), (False, self.false_samples))
            if not hits
        ]

    @property
    def covered(self) -> bool:
        return not self.missing

    def message(self) -> str:
        if not self.reached:
            return f"{self.condition}: no sample reached this condition"
        if self.covered:
            return (
                f"{self.condition}: both sides taken (true: {self.true_samples[0]}, "
                f"false: {self.false_samples[0]})"
            )
        side = "true" if True in self.missing else "false"
        return f"{self.condition}: no sample found for the {side} side"


@dataclass
class BranchReport:
    conditions: list[BranchCoverage] = field(default_factory=list)
    samples_tried: int = 0
    error: str | None = None  # the probe could not be built or run

    @property
    def complete(self) -> bool:
        return self.error is None and all(c.covered for c in self.conditions)

    def sample_for(self, condition: BranchCondition, side: bool) -> str | None:
        for cov in self.conditions:
            if cov.condition == condition:
                hits = cov.true_samples if side else cov.false_samples
                return hits[0] if hits else None
        return None


@dataclass
class TraceMismatch:
    sample: str
    max_abs_diff: float
    # Conditions whose side differs from the one the trace example took: (condition, example
    # side, sample side). Empty when the probe is unavailable.
    flipped: list[tuple[BranchCondition, bool, bool]] = field(default_factory=list)

    def message(self) -> str:
        text = f"trace disagrees with eager on {self.sample} (max abs diff {self.max_abs_diff:.3g})"
        if self.flipped:
            cond, was, now = self.flipped[0]
            text += (
                f": the trace froze the {str(was).lower()} side of {cond}, "
                f"this sample takes the {str(now).lower()} side"
            )
        return text


@dataclass
class TraceReport:
    samples_checked: int = 0
    mismatches: list[TraceMismatch] = field(default_factory=list)
    error: str | None = None

    @property
    def frozen(self) -> bool:
        """The trace disagrees with eager on some sample: it baked in a branch."""
        return bool(self.mismatches)


# --------------------------------------------------------------------------- conditions


def _source_of(module: torch.nn.Module) -> str:
    """The text of the file defining the module's class (helpers and bases live there too)."""
    code = getattr(type(module).forward, "__code__", None)
    if code is not None:
        lines = linecache.getlines(code.co_filename)
        if lines:
            return "".join(lines)
    return textwrap.dedent(inspect.getsource(type(module)))


def _conditions_in(text: str, class_names: Iterable[str], path: str = "model.py") -> list[dict]:
    """The conditions the data-dependent-branch rule finds in a file when `class_names` count
    as captured, run by the scanner as it runs every check."""
    from migrate.analysis.repository_facts import RepositoryFacts
    from migrate.registry import codes_with
    from migrate.scan.checkset import CheckSet
    from migrate.scan.file_analysis import analyze_python

    facts = RepositoryFacts.of_captured_classes(class_names)
    result = analyze_python(path, text, CheckSet(list(codes_with("data-branch"))), repo_facts=facts)
    if result.error:
        raise SyntaxError(result.error)
    return [
        {
            "function": f.get("function"),
            "line": f.line,
            "condition": f.get("condition"),
            "kind": f.get("kind"),
            "fix": f.fix.value,
            "reason": f.get("reason"),
        }
        for f in sorted(result.findings, key=lambda f: (f.line, f.column))
    ]


def find_conditions(module: torch.nn.Module, source: str | None = None) -> list[BranchCondition]:
    """The data-dependent conditions of `type(module).forward` and the helpers it calls."""
    text = source if source is not None else _source_of(module)
    out = []
    for hit in _conditions_in(text, [type(module).__name__]):
        out.append(
            BranchCondition(
                hit["function"],
                hit["line"],
                hit["condition"],
                hit["kind"],
                hit["fix"],
                hit["reason"],
            )
        )
    return out


# --------------------------------------------------------------------------- the probe

_PROBE = "_migrate_probe"


class _Recorder:
    def __init__(self) -> None:
        self.seen: list[tuple[int, bool]] = []

    def __call__(self, index: int, value: Any) -> Any:
        try:
            self.seen.append((index, bool(value)))
        except Exception:  # a multi-element tensor: forward itself will raise on it
            pass
        return value


def _probed(
    module: torch.nn.Module, source: str, conditions: Sequence[BranchCondition]
) -> tuple[Callable[..., Any], _Recorder]:
    """A callable running forward with every condition wrapped in the recorder."""
    tree = ast.parse(source)
    wanted = {(c.line, c.condition) for c in conditions}
    index_of = {(c.line, c.condition): i for i, c in enumerate(conditions)}

    class Wrap(ast.NodeTransformer):
        def _wrap(self, node: ast.AST) -> ast.AST:
            self.generic_visit(node)
            test = node.test  # type: ignore[attr-defined]
            key = (test.lineno, ast.get_source_segment(source, test))
            if key in wanted:
                call = ast.Call(
                    ast.Name(_PROBE, ast.Load()), [ast.Constant(index_of[key]), test], []
                )
                node.test = ast.copy_location(call, test)  # type: ignore[attr-defined]
            return node

        visit_If = visit_While = visit_IfExp = _wrap

    # Everything that may call a probed function is compiled against the probed namespace:
    # module functions, and forward of every class of the file (submodules included).
    functions = {c.function for c in conditions}
    methods: dict[str, ast.FunctionDef] = {}
    plain: dict[str, ast.FunctionDef] = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                qual = f"{node.name}.{item.name}" if isinstance(item, ast.FunctionDef) else ""
                if qual in functions or (qual.endswith(".forward") and not _uses_super(item)):
                    methods[qual] = item  # type: ignore[assignment]
        elif isinstance(node, ast.FunctionDef) and (
            node.name in functions or not node.decorator_list
        ):
            plain[node.name] = node
    forward = type(module).forward
    namespace = dict(forward.__globals__)
    recorder = _Recorder()
    namespace[_PROBE] = recorder
    compiled: dict[str, Any] = {}
    for name, fn in [*methods.items(), *plain.items()]:
        fn = Wrap().visit(copy.deepcopy(fn))
        fn.decorator_list = []
        code = compile(ast.fix_missing_locations(ast.Module([fn], [])), "<migrate-probe>", "exec")
        scope: dict[str, Any] = {}
        exec(code, namespace, scope)  # noqa: S102 - the module's own source, instrumented
        compiled[name] = scope[fn.name]
    namespace.update({k: v for k, v in compiled.items() if "." not in k})

    # Methods override on a subclass of each class that defines them, so that submodules
    # (instances of other classes of the file) run their probed forward too.
    by_class: dict[str, dict[str, Any]] = {}
    for qual, fn in compiled.items():
        if "." in qual:
            owner, meth = qual.split(".", 1)
            by_class.setdefault(owner, {})[meth] = fn

    def swap(m: torch.nn.Module) -> torch.nn.Module:
        twin = copy.copy(m)
        for owner in type(m).__mro__:
            if owner.__name__ in by_class:
                twin.__class__ = type(
                    f"Probed{type(m).__name__}", (type(m),), by_class[owner.__name__]
                )
                break
        twin._modules = {k: (swap(v) if v is not None else None) for k, v in m._modules.items()}
        return twin

    return swap(module), recorder


def _uses_super(fn: ast.FunctionDef) -> bool:
    return any(isinstance(n, ast.Name) and n.id == "super" for n in ast.walk(fn))


def branch_samples(example: tuple[Any, ...], n: int = 32, seed: int = 0) -> Iterable[Sample]:
    """The example, then seeded random samples and rescaled variants (negated, absolute,
    x10, x0.1, zeros): data-dependent conditions often need a sign or a magnitude to flip."""
    from migrate.verify.inputs import random_like

    yield Sample("example", tuple(example), {"kind": "example"})
    gen = torch.Generator().manual_seed(seed)
    variants: list[tuple[str, Callable[[torch.Tensor], torch.Tensor]]] = [
        ("", lambda t: t),
        ("-", lambda t: -t),
        ("abs", lambda t: t.abs()),
        ("-abs", lambda t: -t.abs()),
        ("x10", lambda t: t * 10),
        ("x0.1", lambda t: t * 0.1),
    ]
    yield Sample(
        "zeros",
        tuple(torch.zeros_like(a) if isinstance(a, torch.Tensor) else a for a in example),
        {"kind": "branch"},
    )
    for k in range(n):
        base = random_like(example, gen)
        for label, fn in variants:
            args = tuple(
                fn(a) if isinstance(a, torch.Tensor) and a.is_floating_point() else a for a in base
            )
            yield Sample(f"random[{k}]{label}", args, {"kind": "branch", "seed": seed})


def search_branches(
    module: torch.nn.Module,
    example: tuple[Any, ...],
    samples: Iterable[Sample | tuple[Any, ...]] | None = None,
    *,
    conditions: Sequence[BranchCondition] | None = None,
    source: str | None = None,
    n: int = 32,
    seed: int = 0,
    keep: int = 3,
) -> BranchReport:
    """Run samples through a probed forward and record which side of each condition they take.

    Stops early once every condition has `keep` samples on both sides.
    """
    text = source if source is not None else _source_of(module)
    conds = list(conditions) if conditions is not None else find_conditions(module, text)
    report = BranchReport([BranchCoverage(c) for c in conds])
    if not conds:
        return report
    try:
        probe, recorder = _probed(module, text, conds)
    except Exception as exc:  # source not available or not what the class runs
        report.error = f"cannot instrument forward: {type(exc).__name__}: {exc}"
        return report
    items = samples if samples is not None else branch_samples(example, n, seed)
    with torch.no_grad():
        for i, item in enumerate(items):
            name, args = (
                (item.name, item.args) if isinstance(item, Sample) else (f"sample[{i}]", item)
            )
            recorder.seen.clear()
            try:
                probe(*args)
            except Exception:  # an input the model rejects: it takes neither side
                continue
            finally:
                report.samples_tried += 1
            for index, side in recorder.seen:
                cov = report.conditions[index]
                cov.reached = True
                hits = cov.true_samples if side else cov.false_samples
                if name not in hits and len(hits) < keep:
                    hits.append(name)
            if all(
                len(c.true_samples) >= keep and len(c.false_samples) >= keep
                for c in report.conditions
            ):
                break
    return report


def _sides(
    probe: Callable[..., Any], recorder: _Recorder, args: tuple[Any, ...]
) -> dict[int, bool]:
    recorder.seen.clear()
    try:
        with torch.no_grad():
            probe(*args)
    except Exception:
        return {}
    first: dict[int, bool] = {}
    for index, side in recorder.seen:
        first.setdefault(index, side)
    return first


def _leaves(out: Any) -> list[torch.Tensor]:
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in _leaves(o)]
    if isinstance(out, dict):
        return [t for v in out.values() for t in _leaves(v)]
    return []


def check_trace(
    module: torch.nn.Module,
    example: tuple[Any, ...],
    samples: Iterable[Sample | tuple[Any, ...]] | None = None,
    *,
    traced: Callable[..., Any] | None = None,
    conditions: Sequence[BranchCondition] | None = None,
    source: str | None = None,
    n: int = 32,
    seed: int = 0,
    rtol: float = 1e-4,
    atol: float = 1e-5,
) -> TraceReport:
    """Compare a TorchScript trace (made from `example` unless given) with the eager module.

    A disagreement is the sign that the trace froze a data-dependent branch; when the probe
    works, each mismatch names the condition whose side differs from the example's.
    """
    report = TraceReport()
    if traced is None:
        try:
            with warnings.catch_warnings(), torch.no_grad():
                warnings.simplefilter("ignore")
                traced = torch.jit.trace(module, example, check_trace=False)
        except Exception as exc:
            report.error = f"torch.jit.trace failed: {type(exc).__name__}: {exc}"
            return report
    probe = recorder = None
    conds: list[BranchCondition] = []
    try:
        text = source if source is not None else _source_of(module)
        conds = list(conditions) if conditions is not None else find_conditions(module, text)
        if conds:
            probe, recorder = _probed(module, text, conds)
    except Exception:
        probe = None
    traced_sides = _sides(probe, recorder, example) if probe and recorder else {}
    items = samples if samples is not None else branch_samples(example, n, seed)
    with torch.no_grad():
        for i, item in enumerate(items):
            name, args = (
                (item.name, item.args) if isinstance(item, Sample) else (f"sample[{i}]", item)
            )
            try:
                want = _leaves(module(*args))
            except Exception:
                continue
            report.samples_checked += 1
            try:
                got = _leaves(traced(*args))
            except Exception as exc:
                report.mismatches.append(TraceMismatch(name, float("inf")))
                report.error = report.error or f"trace failed on {name}: {exc}"
                continue
            diff = 0.0
            if len(got) != len(want):
                diff = float("inf")
            for g, w in zip(got, want, strict=False):
                if g.shape != w.shape:
                    diff = float("inf")
                    break
                if not torch.allclose(g.double(), w.double(), rtol=rtol, atol=atol, equal_nan=True):
                    diff = max(diff, (g.double() - w.double()).abs().max().item())
            if diff == 0.0:
                continue
            flipped = []
            if probe and recorder:
                now = _sides(probe, recorder, args)
                flipped = [
                    (conds[k], traced_sides[k], side)
                    for k, side in now.items()
                    if k in traced_sides and traced_sides[k] != side
                ]
            report.mismatches.append(TraceMismatch(name, diff, flipped))
    return report
