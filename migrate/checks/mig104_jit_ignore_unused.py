"""MIG104: @torch.jit.ignore / @torch.jit.unused decorators."""

from __future__ import annotations

from migrate.checks._decorator_removal import DecoratorRemoval


class JitIgnoreUnused(DecoratorRemoval):
    code = "MIG104"
    advice = "torch.export traces the Python that runs, remove the decorator"
