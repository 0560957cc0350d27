"""MIG102: torch.jit.trace(m, x) -> torch.export.export(m, (x,)), uses of the result kept working."""

from __future__ import annotations

from migrate.checks._trace_capture import TraceCapture
from migrate.checks.export.apis import TRACE_PARAMS


class JitTraceToExport(TraceCapture):
    code = "MIG102"
    verb = "torch.jit.trace"
    why = "freezes control flow and is deprecated"
    params = TRACE_PARAMS
