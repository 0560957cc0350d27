"""MIG108: torch.jit._overload / _overload_method: remove TorchScript overload stubs' decorator"""

from __future__ import annotations

from migrate.checks.mig104_jit_ignore_unused import DecoratorRemoval


class JitOverload(DecoratorRemoval):
    code = "MIG108"
    advice = "export traces one concrete call, remove the overload decorator"
