"""The ladder's re-capture: an archive's method called from a plain module and exported
non-strict through the dispatcher, the TorchScript interpreter's aten calls captured (loops
unrolled and ``if`` sides chosen at the example), from a frozen copy or, when freezing
fails, from the unfrozen archive with its parameters read as constant buffers.
"""

from __future__ import annotations

import contextlib
import copy
import warnings
from collections.abc import Iterator
from typing import Any

import torch
from torch import nn

from migrate.verify import convert as conv


class _Recapture(nn.Module):
    """A plain module calling one method of a frozen TorchScript module."""

    def __init__(self, frozen: Any, method: str) -> None:
        super().__init__()
        self.frozen = frozen
        self.method = method

    def forward(self, *args: Any) -> Any:
        return getattr(self.frozen, self.method)(*args)


class _Unfrozen(nn.Module):
    """A plain module calling one method of a TorchScript module it does not register: its
    parameters are not the wrapper's, so non-strict export reads them as constants."""

    def __init__(self, ts: Any, method: str) -> None:
        super().__init__()
        object.__setattr__(self, "ts", ts)
        self.method = method

    def forward(self, *args: Any) -> Any:
        return getattr(self.ts, self.method)(*args)


def recapture_unfrozen(ts: Any, method: str, example: tuple[Any, ...], dynamic_shapes: Any) -> Any:
    """``ts``'s method (a fresh load, in eval mode) exported non-strict, parameters as buffers."""
    ts.eval()
    for p in ts.parameters():
        p.requires_grad_(False)
    ds = None if dynamic_shapes is None else {"args": tuple(dynamic_shapes)}
    with plain_interpreter():
        ep = torch.export.export(
            _Unfrozen(ts, method), tuple(example), dynamic_shapes=ds, strict=False
        )
    return conv.core_ops(ep)


@contextlib.contextmanager
def plain_interpreter() -> Iterator[None]:
    """TorchScript run without its optimizing executor while export traces it.

    The profiling executor's optimized plan compares tensors by value (``aten::equal``,
    e.g. on the constants a frozen Swin holds), which export's fake tensors cannot answer
    (``DataDependentOutputException: aten.equal.default``); the plain interpreter runs the
    graph's own ops only, the same numbers.
    """
    with torch.jit.optimized_execution(False):
        yield


def freeze(ts: Any, methods: list[str], copy_first: bool = True) -> Any:
    """``torch.jit.freeze`` of ``ts`` in eval mode (of a copy unless ``copy_first`` is False:
    a fresh load that nothing else holds)."""
    keep = [m for m in methods if m != "forward"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        module = copy.deepcopy(ts) if copy_first else ts
        return torch.jit.freeze(module.eval(), preserved_attrs=keep)


def control_flow(frozen: Any, method: str) -> list[str]:
    """What re-capture specialises: loops and conditionals left in the frozen graph."""
    graph = getattr(frozen, method).graph
    loops = len(graph.findAllNodes("prim::Loop", True))
    ifs = len(graph.findAllNodes("prim::If", True))
    out = []
    if loops:
        out.append(f"{loops} prim::Loop unrolled for the example's trip count")
    if ifs:
        out.append(f"{ifs} prim::If reduced to the side the example takes")
    return out


def recapture(frozen: Any, method: str, example: tuple[Any, ...], dynamic_shapes: Any) -> Any:
    ds = None if dynamic_shapes is None else {"args": tuple(dynamic_shapes)}
    with plain_interpreter():
        ep = torch.export.export(
            _Recapture(frozen, method), tuple(example), dynamic_shapes=ds, strict=False
        )
    # Frozen constants computed from parameters (a fused attention's packed weights) still
    # carry autograd history, which makes the program impossible to copy for lowering.
    for name, value in list(ep.constants.items()):
        if isinstance(value, torch.Tensor) and not value.is_leaf:
            ep.constants[name] = value.detach()
    return conv.core_ops(ep)
