"""`migrate verify --evidence FILE[#PATH:LINE]`: the recorded call shapes of one capture as
verify's own `--input-shape` and `--dynamic-dim` values (torch-free; verify parses them)."""

from __future__ import annotations

from pathlib import Path

from migrate.record.merge import read_evidence

_WITH_CALLS = frozenset(
    {"torch.jit.script", "torch.jit.trace", "torch.jit.load", "_load_for_lite_interpreter"}
)


def verify_inputs(spec: str) -> tuple[list[str], list[str], str]:
    """(input shapes, dynamic dims, which site) for `FILE` or `FILE#PATH:LINE`; ValueError
    naming the file and the cause when the evidence cannot give them."""
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
    shapes, dynamic = [], []
    for index, (arg, axes) in enumerate(zip(call["args"], call["axes"], strict=True)):
        # The example takes each axis's largest size; verify then samples min, middle, max.
        sizes = [max(seen) if seen else size for seen, size in zip(axes, arg["shape"], strict=True)]
        shapes.append(
            "x".join(map(str, sizes)) + f":{arg['dtype']}" if sizes else f"scalar:{arg['dtype']}"
        )
        dynamic += [
            f"{index}:{dim}:{min(seen)}:{max(seen)}"
            for dim, seen in enumerate(axes)
            if len(seen) > 1
        ]
    return shapes, dynamic, names[0]
