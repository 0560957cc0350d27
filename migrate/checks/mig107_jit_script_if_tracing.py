"""MIG107: @torch.jit.script_if_tracing: remove the decorator"""

from __future__ import annotations

from migrate.checks._decorator_removal import DecoratorRemoval


class JitScriptIfTracing(DecoratorRemoval):
    code = "MIG107"
    advice = "export keeps control flow via torch.cond, remove the decorator"
