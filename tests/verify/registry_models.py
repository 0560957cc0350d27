"""A small model registry built in code for the batch tests and benchmarks/registry_bench.py.

Each archive is tiny (a Linear or two) so that one conversion is dominated by the worker's
start-up and one lowering, as it would be per archive in a real registry.
"""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path

import torch
from torch import nn

from tests.verify import recovery_models as rm


class Hang(nn.Module):
    """Never returns for a finite input: x == x holds for every value but NaN, and adding 1
    never makes one (a denial of service the audit does not look for)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        while bool((x == x).all()):
            x = x + 1.0
        return x


def _save(ts: torch.jit.ScriptModule, path: Path) -> Path:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.jit.save(ts, str(path))
    return path


def linear(seed: int, traced: bool = False) -> torch.jit.ScriptModule:
    torch.manual_seed(seed)
    module = nn.Sequential(nn.Linear(4, 3), nn.ReLU()).eval()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if traced:
            return torch.jit.trace(module, (torch.randn(2, 4),))
        return torch.jit.script(module)


def passing_archives(folder: Path, count: int) -> list[Path]:
    """``count`` Linear/ReLU archives (scripted and traced in turn) taking a 2x4 float."""
    folder.mkdir(parents=True, exist_ok=True)
    return [
        _save(linear(i, traced=bool(i % 2)), folder / f"linear_{i:02d}.pt") for i in range(count)
    ]


def registry(folder: Path) -> dict[str, Path]:
    """Two passing archives, one mismatching, one hostile, one corrupt, one that hangs;
    and ``manifest.jsonl`` giving each its inputs (the hanging one a 10 s timeout)."""
    folder.mkdir(parents=True, exist_ok=True)
    a, b = passing_archives(folder, 2)
    loop, example = rm.arg_loop()  # an int loop count: unrolled at 3, the archive takes 4
    torch.save(example, folder / "arg_loop_inputs.pt")
    paths = {
        "pass_scripted": a,
        "pass_traced": b,
        "mismatch": _save(loop, folder / "arg_loop.pt"),
        "refused": _save(
            torch.jit.script(rm.Hostile(str(folder / "victim"))), folder / "hostile.pt"
        ),
        "corrupt": folder / "corrupt.pt",
        "timeout": _save(torch.jit.script(Hang()), folder / "hang.pt"),
    }
    paths["corrupt"].write_bytes(os.urandom(2048))
    rows = [
        {"archive": a.name, "input_shapes": ["2x4"]},
        {"archive": b.name, "input_shapes": "2x4"},
        {"archive": "arg_loop.pt", "inputs": "arg_loop_inputs.pt"},
        {"archive": "hostile.pt", "input_shapes": ["2x4"]},
        {"archive": "corrupt.pt", "input_shapes": ["2x4"]},
        {"archive": "hang.pt", "input_shapes": ["2x4"], "timeout": 10},
    ]
    manifest = folder / "manifest.jsonl"
    manifest.write_text("".join(json.dumps(r) + "\n" for r in rows))
    paths["manifest"] = manifest
    return paths
