"""`migrate verify --evidence FILE[#PATH:LINE]`: the recorded call shapes of one capture as
verify's own `--input-shape` and `--dynamic-dim` values (torch-free; verify parses them), and
every distinct shape the recorded calls had, for verify to compare the models on each."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from migrate.record.merge import read_evidence

MAX_CHECKED = 32  # recorded shapes verify compares on; more are sampled evenly
_WITH_CALLS = frozenset(
    {"torch.jit.script", "torch.jit.trace", "torch.jit.load", "_load_for_lite_interpreter"}
)


@dataclass
class RecordedInputs:
    shapes: list[str]  # --input-shape values: the example (each axis at its largest size)
    dynamic: list[str]  # --dynamic-dim values: the axes seen with several sizes
    site: str  # PATH:LINE of the capture
    checked: list[list[list[int]]] = field(default_factory=list)  # each call's tensor shapes
    note: str | None = None  # when only some of the recorded shapes are checked


def verify_inputs(spec: str) -> RecordedInputs:
    """The inputs for `FILE` or `FILE#PATH:LINE`; ValueError naming the file and the cause
    when the evidence cannot give them."""
    file, _, wanted = spec.partition("#")
    data = read_evidence(Path(file))
    sites = [s for s in data["sites"] if s["api"] in _WITH_CALLS and s["calls"]]
    if wanted:
        sites = [s for s in sites if f"{s['path']}:{s['line']}" == wanted]
    names = sorted({f"{s['path']}:{s['line']}" for s in sites})
    if len(names) != 1:
        found = ", ".join(names) or "none"
        raise ValueError(
            f"--evidence {spec}: {'no' if not names else 'several'} recorded captures with calls "
            f"{'match' if wanted else 'in the file'} ({found}); name one as FILE#PATH:LINE"
        )
    site = next(s for s in sites if f"{s['path']}:{s['line']}" == names[0])
    if len(site["calls"]) != 1:
        raise ValueError(
            f"--evidence {spec}: {names[0]} was called with {len(site['calls'])} signatures"
        )
    call = site["calls"][0]
    if call["kwargs"] or not all(a["t"] == "tensor" for a in call["args"]):
        raise ValueError(
            f"--evidence {spec}: {names[0]}'s calls pass keywords or non-tensor arguments"
        )
    shapes, dynamic, example = [], [], []
    for index, (arg, axes) in enumerate(zip(call["args"], call["axes"], strict=True)):
        # The example takes each axis's largest size (export specialises sizes 0 and 1).
        sizes = [max(seen) if seen else size for seen, size in zip(axes, arg["shape"], strict=True)]
        example.append(sizes)
        shapes.append(
            "x".join(map(str, sizes)) + f":{arg['dtype']}" if sizes else f"scalar:{arg['dtype']}"
        )
        dynamic += [
            f"{index}:{dim}:{min(seen)}:{max(seen)}"
            for dim, seen in enumerate(axes)
            if len(seen) > 1
        ]
    checked, note = _checked_shapes(call, example)
    return RecordedInputs(shapes, dynamic, names[0], checked, note)


def _checked_shapes(call: dict, example: list[list[int]]) -> tuple[list, str | None]:
    """Every distinct shape the calls had (the example's own left out), at most MAX_CHECKED
    of them, evenly spaced and the smallest and largest kept; evidence recorded before
    joint shapes were kept gives each recorded size of each axis, the others at the
    example's."""
    seen = call.get("shapes")
    if seen is None:
        seen = [
            [
                [size if (i, d) != (leaf, axis) else other for d, size in enumerate(shape)]
                for i, shape in enumerate(example)
            ]
            for leaf, axes in enumerate(call["axes"])
            for axis, sizes in enumerate(axes)
            for other in sizes
        ]
    distinct = sorted({json.dumps(s): s for s in seen if s != example}.values())
    if len(distinct) <= MAX_CHECKED:
        return distinct, None
    step = (len(distinct) - 1) / (MAX_CHECKED - 1)
    picked = [distinct[round(k * step)] for k in range(MAX_CHECKED)]
    return picked, (
        f"{len(distinct)} distinct shapes recorded: {MAX_CHECKED} checked, evenly spaced "
        "(smallest and largest included)"
    )
