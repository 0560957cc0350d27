"""MIG103: torch.jit.trace_module(m, {"forward": x}) -> torch.export.export(m, (x,))."""

from __future__ import annotations

from migrate.checks._trace_capture import TraceCapture
from migrate.checks.export.apis import TRACE_MODULE_PARAMS


class JitTraceModuleToExport(TraceCapture):
    code = "MIG103"
    verb = "torch.jit.trace_module"
    why = "is deprecated"
    params = TRACE_MODULE_PARAMS
