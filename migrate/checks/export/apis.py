"""The TorchScript and export APIs the export rewrites read, and a call's arguments bound
to their parameters (names as torch spells them)."""

from __future__ import annotations

import ast

from migrate.checks.base import PythonContext
from migrate.registry import code_for, code_with

# The captures the rewrites turn into exports, and the rule reporting each.
JIT_CAPTURES = frozenset({"torch.jit.trace", "torch.jit.trace_module", "torch.jit.script"})
CAPTURE_RULES = {api: code_for("capture", api) for api in sorted(JIT_CAPTURES)}
SCRIPT_RULE = CAPTURE_RULES["torch.jit.script"]
TRACE_RULE = CAPTURE_RULES["torch.jit.trace"]
# The rules of the calls a capture's rewrite moves with it, as the rules' data name them.
SAVE_RULE = code_for("producer", "torch.jit.save")
LOAD_RULE = code_for("consumer", "torch.jit.load")
MOBILE_RULE = code_with("mobile")
LITE_SAVE_RULE = code_with("lite-save")
INFERENCE_PASS_RULE = code_with("inference-pass")
# Passes whose result is the module they were given, still TorchScript.
JIT_PASSES = frozenset({"torch.jit.freeze", "torch.jit.optimize_for_inference"})
# Calls whose result is already an ExportedProgram.
EP_MAKERS = frozenset({"torch.export.export", "torch.export.load"})
OPTIMIZE_FOR_MOBILE = "torch.utils.mobile_optimizer.optimize_for_mobile"
LITE_LOADS = frozenset(
    {"torch.jit._load_for_lite_interpreter", "torch.jit.mobile._load_for_lite_interpreter"}
)
LITE_SAVES = ("_save_for_lite_interpreter", "_save_to_buffer_for_lite_interpreter")  # methods

# The parameters of torch.jit.trace and torch.jit.trace_module, in order.
TRACE_PARAMS = (
    "func",
    "example_inputs",
    "optimize",
    "check_trace",
    "check_inputs",
    "check_tolerance",
    "strict",
    "_force_outplace",
    "_module_class",
    "_compilation_unit",
    "example_kwarg_inputs",
    "_store_inputs",
)
TRACE_MODULE_PARAMS = (
    "mod",
    "inputs",
    "optimize",
    "check_trace",
    "check_inputs",
    "check_tolerance",
    "strict",
    "_force_outplace",
    "_module_class",
    "_compilation_unit",
    "example_inputs_is_kwarg",
    "_store_inputs",
)
# Options that only steer the TorchScript tracer: export has no counterpart (its own
# `strict` means something else), so they are dropped and the finding says so.
TRACE_ONLY = (
    "optimize",
    "check_trace",
    "check_inputs",
    "check_tolerance",
    "strict",
    "_force_outplace",
    "_module_class",
    "_compilation_unit",
    "_store_inputs",
)


def bind_args(call: ast.Call, params: tuple[str, ...]) -> dict[str, ast.expr] | None:
    """Map a call's arguments to parameter names; None for *args/**kwargs or unknown names."""
    bound: dict[str, ast.expr] = {}
    for index, arg in enumerate(call.args):
        if isinstance(arg, ast.Starred) or index >= len(params):
            return None
        bound[params[index]] = arg
    for kw in call.keywords:
        if kw.arg is None or kw.arg not in params or kw.arg in bound:
            return None
        bound[kw.arg] = kw.value
    return bound


def captured_module(ctx: PythonContext, call: ast.Call, qual: str | None) -> ast.expr | None:
    """The module (or function) a capture call `qual` captures, when the call shows it."""
    params = TRACE_MODULE_PARAMS if qual == "torch.jit.trace_module" else TRACE_PARAMS
    if qual == "torch.jit.script":
        return call.args[0] if call.args else None
    bound = bind_args(call, params)
    return bound.get(params[0]) if bound else None
