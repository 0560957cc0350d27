"""What the checks ask the recorded evidence (issue 28). Each answer is code text plus the note
its fix message carries, so every fix says which evidence it used; no evidence, or a stale
site, answers None (with the stale note where there was one).

- `script_kind`: function or module, for a `torch.jit.script` the file cannot classify;
- `example_inputs`: export's `args` generated as code (seeded `torch.randn`, the recorded
  shapes and dtypes) where no inputs are in scope;
- `inputs_form`: whether a trace's example is one input or a tuple of inputs;
- `dynamic_shapes`: `dynamic_shapes=` for exactly the axes whose sizes varied across calls,
  with torch.export's own `Dim.AUTO`;
- `saved_programs` / `lowered_by`: a lite-interpreter save of a value the file cannot place
  (a parameter) and the captures the run saw it save, which are exported programs once
  migrated;
- `load_writers`: which recorded saves wrote the files a load read (a run-time path links
  to its producers; the planner rewrites it once every one of them is migrated).
"""

from __future__ import annotations

import ast
import keyword
from dataclasses import dataclass

from migrate.record.boot._migrate_recorder import tensors_of
from migrate.record.evidence import Match, active
from migrate.record.merge import merge_calls

SCRIPT = frozenset({"torch.jit.script"})
TRACE = frozenset({"torch.jit.trace"})
CAPTURES = SCRIPT | TRACE
LOADS = frozenset({"torch.jit.load", "_load_for_lite_interpreter"})
LITE_SAVES = frozenset({"ScriptModule._save_for_lite_interpreter"})
_FLOATS = frozenset({"float32", "float64", "float16", "bfloat16"})
# What may reach generated code from an evidence file, which comes with the tree: sizes as
# ints, and names only from these lists (a dtype or device outside them gives no code).
_DTYPES = _FLOATS | frozenset(
    "int8 int16 int32 int64 uint8 uint16 uint32 uint64 bool complex64 complex128".split()
)
_DEVICES = frozenset({"cpu", "cuda", "mps", "xpu", "meta", "hpu", "mtia"})


def site(ctx, node: ast.AST, apis: frozenset[str]) -> Match:
    evidence = active()
    if evidence is None:
        return Match(None)
    return evidence.at(ctx, node, apis)


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'s' * (count != 1)}"


# --------------------------------------------------------------------------- kind


def script_kind(ctx, call: ast.Call) -> tuple[str | None, str | None]:
    """(function | module | class, note), or (None, stale note or None)."""
    match = site(ctx, call, SCRIPT)
    if match.site is None:
        return None, match.note
    seen = match.site["captured"]
    kinds = {c["value"]["kind"] for c in seen}
    count = sum(c["count"] for c in seen)
    if kinds <= {"module", "script_module"} and kinds:
        kind = "module"
    elif kinds <= {"function", "method"} and kinds:
        kind = "function"
    elif kinds == {"class"}:
        kind = "class"
    else:
        return None, f"the recorded run scripted {', '.join(sorted(kinds))} here: decide by hand"
    names = sorted({c["value"].get("class") or c["value"].get("name", "?") for c in seen})
    what = "module" if kind == "module" else kinds.pop() if len(kinds) == 1 else kind
    return kind, f"evidence: seen {_plural(count, 'capture')} of a {what} (`{'`, `'.join(names)}`)"


# --------------------------------------------------------------------------- calls


@dataclass
class Calls:
    """The one call signature a capture's result was seen with (sizes merged)."""

    entry: dict
    source: str  # where the calls were seen, for the note

    @property
    def count(self) -> int:
        return self.entry["count"]

    def leaves(self) -> list[dict]:
        whole = {
            "t": "tuple",
            "items": [
                {"t": "tuple", "items": self.entry["args"]},
                {"t": "dict", "items": self.entry["kwargs"]},
            ],
        }
        return tensors_of(whole)

    def varied(self) -> list[tuple[int, int, list[int]]]:
        """(tensor leaf, axis, sizes seen) for every axis seen with more than one size."""
        return [
            (leaf, axis, sizes)
            for leaf, axes in enumerate(self.entry["axes"])
            for axis, sizes in enumerate(axes)
            if len(sizes) > 1
        ]

    def summary(self) -> str:
        parts = []
        for leaf, axis, sizes in self.varied():
            name = "batch" if axis == 0 else f"dim {axis}"
            where = "" if len(self.entry["axes"]) == 1 else f" of input {leaf + 1}"
            parts.append(f"{name}{where} {min(sizes)}..{max(sizes)}")
        shown = f", {', '.join(parts)}" if parts else ""
        return f"seen {_plural(self.count, 'call')}{self.source}{shown}"


def calls_of(capture: dict) -> tuple[Calls | None, str | None]:
    """The calls of a capture's result: its own and those of the loads that read a file a
    save of it wrote (the saved program serves them too), merged when they share one
    signature. (calls, why not) where several signatures were seen."""
    calls = list(capture["calls"])
    evidence = active()
    loads = evidence.loads_of_saves(capture) if evidence is not None else []
    through = [load for load in loads if load["calls"]]
    for load in through:
        calls += load["calls"]
    where = ", ".join(f"{load['path']}:{load['line']}" for load in through)
    source = ""
    if where:
        source = f"{' here and' if capture['calls'] else ''} through the load at {where}"
    if not calls:
        return None, None
    merged: list[dict] = []
    merge_calls(merged, calls)
    if len(merged) > 1:
        return None, f"the recorded run called it with {len(merged)} different signatures"
    return Calls(merged[0], source), None


# --------------------------------------------------------------------------- code


def _size(value) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _key(name) -> str | None:
    """A recorded dict key as a string literal, for identifiers only (the recorder writes
    any other key as `<type>`); None for anything else."""
    if not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name):
        return None
    return f'"{name}"'  # an identifier holds no quote or backslash


class _Writer:
    """Example inputs as code: seeded randn for floats, zeros for integers and bools. Every
    value written is rendered from a checked one (`_size`, `_key`, `_DTYPES`, `_DEVICES`);
    anything else answers None: no code."""

    def __init__(self, spell, calls: Calls) -> None:
        self.spell = spell  # qualname -> text (adding its import to the fix)
        self.calls = calls
        self.leaf = 0

    def value(self, desc: dict) -> str | None:
        kind = desc.get("t")
        if kind == "tensor":
            return self.tensor(desc)
        if kind == "NoneType":
            return "None"
        if kind in ("tuple", "list"):
            items = [self.value(d) for d in desc["items"]]
            if any(i is None for i in items):
                return None
            if kind == "list":
                return "[" + ", ".join(items) + "]"  # type: ignore[arg-type]
            return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"  # type: ignore[arg-type]
        if kind == "dict":
            pairs = [(_key(k), self.value(v)) for k, v in desc["items"].items()]
            if any(k is None or v is None for k, v in pairs):
                return None
            return "{" + ", ".join(f"{k}: {v}" for k, v in pairs) + "}"
        return None  # a Python scalar or an object: its value is not recorded

    def tensor(self, desc: dict) -> str | None:
        axes = self.calls.entry["axes"]
        seen = axes[self.leaf] if self.leaf < len(axes) else None
        recorded = [_size(n) for n in desc["shape"]]
        if (
            seen is None
            or len(seen) != len(recorded)
            or None in recorded
            or any(_size(n) is None for sizes in seen for n in sizes)
        ):
            return None
        # A varied axis gets its largest size: export specialises sizes 0 and 1.
        shape = [
            max(sizes) if len(sizes) > 1 else size
            for sizes, size in zip(seen, recorded, strict=True)
        ]
        dtype, device = desc["dtype"], desc["device"]
        if dtype not in _DTYPES or device not in _DEVICES:
            return None
        seed = self.leaf
        self.leaf += 1
        dims = ", ".join(map(str, shape)) if shape else "()"
        extra = "" if device == "cpu" else f', device="{device}"'
        if dtype in _FLOATS:
            typed = "" if dtype == "float32" else f", dtype={self.spell(f'torch.{dtype}')}"
            generator = f"{self.spell('torch.Generator')}().manual_seed({seed})"
            return f"{self.spell('torch.randn')}({dims}{typed}, generator={generator}{extra})"
        return f"{self.spell('torch.zeros')}({dims}, dtype={self.spell(f'torch.{dtype}')}{extra})"


def example_inputs(ctx, call: ast.Call, spell) -> tuple[tuple[str, str | None] | None, str]:
    """export's (args, kwargs) texts for a scripted module from the recorded calls of its
    result, with the note; (None, why) when the evidence cannot give them."""
    match = site(ctx, call, SCRIPT)
    if match.site is None:
        return None, match.note or ""
    calls, why = calls_of(match.site)
    if calls is None:
        return None, why or "the recorded run never called the scripted module"
    writer = _Writer(spell, calls)
    args = writer.value({"t": "tuple", "items": calls.entry["args"]})
    kwargs = writer.value({"t": "dict", "items": calls.entry["kwargs"]})
    if args is None or kwargs is None:
        return None, "the recorded calls pass Python values the recorder does not keep"
    note = f"example inputs generated from the recorded calls ({calls.summary()})"
    return (args, kwargs if calls.entry["kwargs"] else None), note


def inputs_form(ctx, inputs: ast.expr, call: ast.Call) -> tuple[str | None, str | None]:
    """A trace's example inputs as export's `args`, from the structure the run recorded."""
    match = site(ctx, call, TRACE)
    if match.site is None:
        return None, match.note
    forms = {e["value"]["inputs"]["t"] for e in match.site["examples"] if e["value"]["inputs"]}
    if len(forms) != 1:
        return None, None
    form = forms.pop()
    text = ctx.source(inputs)
    count = sum(e["count"] for e in match.site["examples"])
    note = f"evidence: the example was a {form} in {_plural(count, 'recorded trace')}"
    if form == "tuple":
        return text, note
    if form == "list":
        return f"tuple({text})", note
    return f"({text},)", note  # a tensor or a dict is one input, as trace reads it


# --------------------------------------------------------------------------- dynamic


def dynamic_shapes(ctx, call: ast.Call, spell) -> tuple[str | None, str | None, str | None]:
    """(`dynamic_shapes` text, note, problem) for a capture whose calls varied in size."""
    match = site(ctx, call, CAPTURES)
    if match.site is None:
        return None, match.note, None
    calls, _ = calls_of(match.site)
    if calls is None:
        return None, None, None
    varied = calls.varied()
    if not varied:
        return None, f"evidence: {calls.summary()}, one size each", None
    if calls.entry["kwargs"]:
        return (
            None,
            None,
            (
                f"the recorded calls vary in size ({calls.summary()}) and pass keywords: give "
                "export's `dynamic_shapes` by hand"
            ),
        )
    small = _small_example(match.site, calls)
    if small:
        return (
            None,
            None,
            (
                f"the recorded calls vary in size ({calls.summary()}) but the example's "
                f"{small} has size 0 or 1, which export specialises: trace with a larger example"
            ),
        )
    by_leaf: dict[int, list[int]] = {}
    for leaf, axis, _ in varied:
        by_leaf.setdefault(leaf, []).append(axis)
    text = _auto_spec(spell, calls.entry["args"], by_leaf)
    if text is None:
        return (
            None,
            None,
            (
                f"the recorded calls vary in size ({calls.summary()}) and pass a dict whose "
                "keys are not Python names: give export's `dynamic_shapes` by hand"
            ),
        )
    return text, f"dynamic_shapes from the recorded calls ({calls.summary()})", None


def _auto_spec(spell, args: list[dict], by_leaf: dict[int, list[int]]) -> str | None:
    """export's `dynamic_shapes` for `args`: `Dim.AUTO` on the axes of each tensor leaf;
    None when a dict key is not a name it can write (`_key`)."""
    auto = f"{spell('torch.export.Dim')}.AUTO"
    counter = [0]

    def spec(desc: dict) -> str | None:
        if desc["t"] == "tensor":
            leaf = counter[0]
            counter[0] += 1
            axes = by_leaf.get(leaf)
            return "{" + ", ".join(f"{a:d}: {auto}" for a in axes) + "}" if axes else "None"
        if desc["t"] in ("tuple", "list"):
            inner = [spec(d) for d in desc["items"]]
            if None in inner:
                return None
            return "(" + ", ".join(inner) + ("," if len(inner) == 1 else "") + ")"  # type: ignore[arg-type]
        if desc["t"] == "dict":
            pairs = [(_key(k), spec(v)) for k, v in desc["items"].items()]
            if any(k is None or v is None for k, v in pairs):
                return None
            return "{" + ", ".join(f"{k}: {v}" for k, v in pairs) + "}"
        return "None"

    return spec({"t": "tuple", "items": args})


def generated_inputs(spell, shapes: list[list[int]], dynamic: list[list[int]]) -> tuple[str, str]:
    """export's `args` and `dynamic_shapes` texts for float32 CPU tensors of these shapes, as
    the recorded path writes them (seeded randn), `Dim.AUTO` on the `dynamic` axes of each:
    for example inputs the source fixes (migrate/checks/_static_inputs.py)."""
    leaves = [{"t": "tensor", "shape": s, "dtype": "float32", "device": "cpu"} for s in shapes]
    entry = {"args": leaves, "kwargs": {}, "axes": [[[n] for n in s] for s in shapes], "count": 0}
    args = _Writer(spell, Calls(entry, "")).value({"t": "tuple", "items": leaves})
    spec = _auto_spec(spell, leaves, dict(enumerate(dynamic)))
    assert args is not None and spec is not None  # float32 CPU tensors only
    return args, spec


def _small_example(capture: dict, calls: Calls) -> str | None:
    """The varied axis of a trace's example that holds size 0 or 1, if any."""
    examples = [e["value"]["inputs"] for e in capture["examples"] if e["value"]["inputs"]]
    if not examples:
        return None
    example = examples[0]
    leaves = tensors_of(
        example if example["t"] in ("tuple", "list") else {"t": "tuple", "items": [example]}
    )
    for leaf, axis, _ in calls.varied():
        if leaf < len(leaves) and axis < len(leaves[leaf]["shape"]):
            if leaves[leaf]["shape"][axis] <= 1:
                return f"axis {axis} of input {leaf + 1}"
    return None


# --------------------------------------------------------------------------- loads


def load_writers(ctx, call: ast.Call) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    """For a load (whose lines still match the run): (the files it read, the recorded saves
    that wrote them, as `path:line`); None without a matching site or files read."""
    match = site(ctx, call, LOADS)
    evidence = active()
    if match.site is None or evidence is None or not match.site["loaded"]:
        return None
    loaded = tuple(match.site["loaded"])
    writers = evidence.writers_of(list(loaded))
    return loaded, tuple(sorted({f"{w['path']}:{w['line']}" for w in writers}))


# --------------------------------------------------------------------------- programs


def saved_programs(ctx, call: ast.Call) -> tuple[tuple[str, ...] | None, str | None]:
    """For a lite save of a value the file cannot place: the captures (`path:line`) whose
    results the run saw it save, when every value it saved came from one; else (None, why)."""
    match = site(ctx, call, LITE_SAVES)
    if match.site is None:
        return None, match.note
    producers = match.site["saves_of"]
    if not producers:
        return None, "the recorded run did not see where the saved value came from"
    others = [p for p in producers if p.rpartition(":")[2] not in CAPTURES]
    if others:
        where, _, api = others[0].rpartition(":")
        return None, f"the recorded run saved here what the `{api}` at {where} returned"
    captures = tuple(sorted(p.rpartition(":")[0] for p in producers))
    return (
        captures,
        f"evidence: the recorded run saved here the result of the capture at {', '.join(captures)}",
    )


def lowered_by(ctx, capture: ast.Call) -> list[dict]:
    """The recorded lite saves that saved this capture's result."""
    match = site(ctx, capture, CAPTURES)
    evidence = active()
    if match.site is None or evidence is None:
        return []
    key = f"{match.site['path']}:{match.site['line']}:{match.site['api']}"
    return [s for s in evidence.by_key.values() if s["api"] in LITE_SAVES and key in s["saves_of"]]
