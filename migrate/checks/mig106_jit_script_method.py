"""MIG106: @torch.jit.script_method: remove the decorator"""

from __future__ import annotations

from migrate.checks._decorator_removal import DecoratorRemoval


class JitScriptMethod(DecoratorRemoval):
    code = "MIG106"
    advice = "the method is plain Python on an nn.Module, remove the decorator"
