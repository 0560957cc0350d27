# ruff: noqa: UP006, UP035, UP045  (TorchScript reads typing annotations as written)
"""Hand-written modules with the patterns of the archives in issue 13 (no transformers).

Each factory returns ``(archive module, example inputs)``: the TorchScript module
(traced or scripted, as the row of the issue's table) and a tuple of inputs.
Shapes are tiny so that lowering stays fast.
"""

from __future__ import annotations

import warnings
from typing import List, Optional, Tuple

import torch
from torch import nn


class PositionIds(nn.Module):
    """BERT/Llama-like embeddings: position ids sliced from a buffer by ``x.size(1)``."""

    def __init__(self) -> None:
        super().__init__()
        self.tok = nn.Embedding(20, 8)
        self.pos = nn.Embedding(16, 8)
        self.register_buffer("position_ids", torch.arange(16).expand((1, -1)), persistent=False)
        self.norm = nn.LayerNorm(8)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        past = 0  # no cache: the slice is [past, past + seq), as in BERT
        seq = ids.size(1)
        positions = self.position_ids[:, past : seq + past]
        causal = torch.arange(past, past + seq).view(1, -1, 1).float() / seq
        return self.norm(self.tok(ids) + self.pos(positions) + causal)


def position_ids_traced() -> Tuple[torch.jit.ScriptModule, Tuple[torch.Tensor]]:
    torch.manual_seed(0)
    ids = torch.randint(0, 20, (2, 6))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return torch.jit.trace(PositionIds().eval(), (ids,)), (ids,)


class ShapeLoop(nn.Module):
    """A loop whose trip count is read at run time (here from the input's first dimension)."""

    def __init__(self) -> None:
        super().__init__()
        self.cell = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.zeros(x.size(1))
        for i in range(x.size(0)):
            h = torch.tanh(self.cell(h) + x[i])
        return h


class ArgLoop(nn.Module):
    """A loop whose trip count is an ``int`` argument: unrolling it is wrong for other counts."""

    def __init__(self) -> None:
        super().__init__()
        self.cell = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor, steps: int) -> torch.Tensor:
        for _ in range(steps):
            x = torch.tanh(self.cell(x))
        return x


class OptionalArg(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor, mask: Optional[torch.Tensor] = None) -> torch.Tensor:
        y = self.fc(x)
        if mask is not None:
            y = y * mask
        return y


class ListInput(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 3)

    def forward(self, xs: List[torch.Tensor]) -> torch.Tensor:
        return self.fc(torch.stack(xs).sum(0))


class TwoMethods(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.head = nn.Linear(4, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self._act(self.fc(x)))

    def _act(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)

    @torch.jit.export
    def encode(self, x: torch.Tensor) -> torch.Tensor:
        return self._act(self.fc(x)) * 2.0


class ValueLoop(nn.Module):
    """A loop count read from tensor values: nothing may specialise it."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for _ in range(int(x.abs().sum()) % 3 + 1):
            x = x * 0.5
        return x


class Hostile(nn.Module):
    """Writes into ``path`` through a file-backed storage when forward runs."""

    def __init__(self, path: str) -> None:
        super().__init__()
        self.path = path

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        v = torch.from_file(self.path, True, 4, dtype=torch.uint8)
        v.fill_(65)
        return x + v[0].float() * 0.0


class HostileOnLoad(nn.Module):
    """Writes into ``path`` from ``__setstate__``, i.e. inside ``torch.jit.load``."""

    def __init__(self, path: str) -> None:
        super().__init__()
        self.path = path
        self.mark = torch.zeros(4, dtype=torch.uint8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + 1.0

    @torch.jit.export
    def __getstate__(self) -> Tuple[str, torch.Tensor, bool]:
        return (self.path, self.mark, self.training)

    @torch.jit.export
    def __setstate__(self, state: Tuple[str, torch.Tensor, bool]) -> None:
        self.path = state[0]
        self.training = state[2]
        self.mark = torch.from_file(self.path, True, 4, dtype=torch.uint8).fill_(66)


def _script(module: nn.Module) -> torch.jit.ScriptModule:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return torch.jit.script(module.eval())


def shape_loop():
    torch.manual_seed(1)
    return _script(ShapeLoop()), (torch.randn(3, 4),)


def arg_loop():
    torch.manual_seed(2)
    return _script(ArgLoop()), (torch.randn(2, 4), 3)


def optional_arg():
    torch.manual_seed(3)
    return _script(OptionalArg()), (torch.randn(2, 4), torch.rand(2, 4))


def list_input():
    torch.manual_seed(4)
    return _script(ListInput()), ([torch.randn(2, 4), torch.randn(2, 4)],)


def value_loop():
    return _script(ValueLoop()), (torch.randn(2, 4),)


def two_methods():
    torch.manual_seed(6)
    return _script(TwoMethods()), (torch.randn(2, 4),)


ROWS = {
    "position_ids_traced": position_ids_traced,
    "shape_loop_scripted": shape_loop,
    "optional_scripted": optional_arg,
    "list_scripted": list_input,
    "two_methods_scripted": two_methods,
}


class PlusOne(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + 1.0


def plus_one() -> nn.Module:
    """What :class:`HostileOnLoad` computes, as a migrated candidate."""
    return PlusOne()
