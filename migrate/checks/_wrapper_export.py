"""Under `--intent drop`: the repository's public TorchScript wrappers move to torch.export,
keeping their names and parameters.

A maintainer who drops TorchScript keeps `convert_to_torchscript(model, filename_or_obj,
extra_files, verify, inputs)` callable as it was called, and changes what it makes: the
module is exported with its own `inputs` parameter as the example (the one it already calls
the made module with, `for x in inputs: script_module(x)`), saved with `torch.export.save(...,
extra_files=...)`, loaded with `torch.export.load(..., extra_files=...).module()`. What the
functions give back changes (an `ExportedProgram`, an `nn.Module` running the export graph),
and callers must pass example inputs: an API change for outside callers, said in the finding.

The wrappers of one file are rewritten together or not at all (what one makes, the next one
saves; what that one writes, the third reads): `export_rewrites` gives every public wrapper's
rewrite, or None and the reason of the first that cannot be. A body is rewritten only when
all its TorchScript calls are of the forms below; anything else refuses, naming it:

- `s = torch.jit.script(param)`, with `s` only called, saved or returned, or `return
  torch.jit.script(param)`, and an example parameter (`Wrapper.example`; where none holds
  them, a keyword parameter `example_inputs=None` is added, `Wrapper.added_example`); a
  guard raising a clear error when no example is passed;
- `torch.jit.save(obj, path[, extra])` of what it scripted or of a parameter;
- `torch.jit.load(path[, map_location][, extra])`.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from migrate.analysis.astwalk import children, walk_tree
from migrate.analysis.dataflow import bound_name, name_uses, parent
from migrate.checks.base import Edit, PythonContext
from migrate.checks.export.apis import INFERENCE_PASS_RULE, LOAD_RULE, SAVE_RULE, SCRIPT_RULE
from migrate.checks.export.builder import FixBuilder
from migrate.checks.export.extra_files import loaded_as_bytes, saved_extra_files
from migrate.checks.export.uses import jit_save_edits, method_save
from migrate.checks.repository_wrappers import LOADS, SAVE, Wrapper, capture_api
from migrate.findings import ImportSpec

_FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef)
_INFERENCE_PASSES = frozenset({"torch.jit.freeze", "torch.jit.optimize_for_inference"})


@dataclass
class Rewrite:
    """One wrapper's export body: its edits, the TorchScript calls they replace (the group's
    members: (rule, call)) and the API change its outside callers see."""

    wrapper: Wrapper
    node: ast.FunctionDef | ast.AsyncFunctionDef
    edits: list[Edit] = field(default_factory=list)
    members: list[tuple[str, ast.Call]] = field(default_factory=list)
    imports: list[str] = field(default_factory=list)
    change: str = ""


def export_rewrites(
    ctx: PythonContext, wrappers: list[Wrapper]
) -> tuple[list[Rewrite] | None, str]:
    out = []
    for w in wrappers:
        found, why = _rewrite(ctx, w)
        if found is None:
            return None, f"`{w.name}` {why}"
        out.append(found)
    return out, ""


def _rewrite(ctx: PythonContext, w: Wrapper) -> tuple[Rewrite | None, str]:
    func = next(s for s in ctx.tree.body if isinstance(s, _FUNCS) and s.lineno == w.line)
    parents = {id(c): p for p in walk_tree(func) for c in children(p)}
    out = Rewrite(w, func)
    made: set[str] = set()
    calls = sorted(
        (n for n in walk_tree(func) if isinstance(n, ast.Call)),
        key=lambda n: (n.lineno, n.col_offset),
    )
    for call in calls:
        api = capture_api(ctx, call) or ""
        if not api.startswith("torch.jit."):
            continue
        if api == "torch.jit.script":
            why = _capture(ctx, w, call, parents, out, made)
        elif api == SAVE:
            why = _save(ctx, w, call, out, made)
        elif api in LOADS and api == "torch.jit.load":
            why = _load(ctx, call, out)
        elif api in _INFERENCE_PASSES:
            why = _inference_pass(ctx, call, parents, out)
        else:
            why = (
                f"calls `{api}`, which this rewrite does not move (it moves "
                "`torch.jit.script`, `save`, `load` and `freeze`)"
            )
        if why:
            return None, why
    for name in made:
        why = _uses(ctx, func, name, parents, out)
        if why:
            return None, why
    out.change = _change(w, made)
    return out, ""


def _capture(ctx, w: Wrapper, call: ast.Call, parents, out: Rewrite, made: set[str]) -> str:
    holder = parents.get(id(call))
    returned = isinstance(holder, ast.Return) and holder.value is call
    if not returned and not (
        isinstance(holder, ast.Assign)
        and len(holder.targets) == 1
        and isinstance(holder.targets[0], ast.Name)
    ):
        return "does not bind what it scripts to one name"
    ex = w.export_example
    if w.capture is None or ex is None:
        return (
            "never calls what it scripts with a parameter's items (`for x in inputs: "
            "module(x)`), so no parameter holds the example inputs export needs"
        )
    target = call.args[0] if call.args else None
    if target is None or call.keywords or len(call.args) != 1:
        return "scripts with arguments export does not take"
    export, imports = ctx.spell("torch.export.export")
    out.imports += imports
    if w.example is None:  # no parameter holds them: one is added, each caller passes it
        out.edits.append(_added_parameter(ctx, out.node, f"{ex}=None"))
    indent = " " * holder.col_offset
    guard = (
        f'if not {ex}:\n{indent}    raise ValueError("{w.name} exports with torch.export: '
        f'pass example `{ex}`")\n{indent}'
    )
    start = ctx.start(holder)
    out.edits.append(Edit(start, start, guard))
    out.edits.append(Edit(*ctx.span(call), f"{export}({ctx.source(target)}, ({ex}[0],))"))
    if ctx.qualname(call.func) == "torch.jit.script":  # another library's has no finding
        out.members.append((SCRIPT_RULE, call))
    if not returned:
        made.add(holder.targets[0].id)  # type: ignore[union-attr]
    return ""


def _added_parameter(ctx, func: ast.FunctionDef | ast.AsyncFunctionDef, text: str) -> Edit:
    """`text` after the last positional parameter: on a line of its own where the
    parameters are one a line with a trailing comma, else after `, `."""
    args = func.args
    last = (*args.posonlyargs, *args.args)[-1]
    default = args.defaults[-1] if args.defaults else None
    end = ctx.end(default if default is not None else last)
    rest = ctx.text[end:].lstrip(" \t")
    if rest.startswith(",") and "\n" in rest[1:].split(")", 1)[0]:
        indent = ctx.index.line_text(last.lineno)[: last.col_offset]
        comma = ctx.text.index(",", end) + 1
        return Edit(comma, comma, f"\n{indent}{text},")
    return Edit(end, end, f", {text}")


def _save(ctx, w: Wrapper, call: ast.Call, out: Rewrite, made: set[str]) -> str:
    obj = call.args[0] if call.args else None
    if not isinstance(obj, ast.Name) or not (obj.id in made or obj.id in w.params):
        return "saves something other than what it exports or is given"
    save, imports = ctx.spell("torch.export.save")
    out.imports += imports
    out.edits.append(Edit(*ctx.span(call.func), save))
    if len(call.args) > 3:
        return "saves with arguments `torch.export.save` does not take"
    extra = call.args[2] if len(call.args) == 3 else None  # torch.jit.save(m, f, _extra_files)
    for kw in call.keywords:
        if kw.arg != "_extra_files":
            return f"saves with `{kw.arg}=`, which `torch.export.save` does not take"
        extra = kw.value
    if extra is not None:  # keyword-only in torch.export.save, and text only
        keyword = next((kw for kw in call.keywords if kw.value is extra), None)
        start = ctx.start(keyword if keyword is not None else extra)
        out.edits.append(
            Edit(start, ctx.end(extra), f"extra_files={saved_extra_files(ctx, extra)}")
        )
    out.members.append((SAVE_RULE, call))
    return ""


def _load(ctx, call: ast.Call, out: Rewrite) -> str:
    given = dict(zip(("f", "map_location", "_extra_files"), call.args, strict=False))
    for kw in call.keywords:
        if kw.arg not in ("f", "map_location", "_extra_files"):
            return f"loads with `{kw.arg}=`, which `torch.export.load` does not take"
        given[kw.arg] = kw.value
    if len(call.args) > 3 or "f" not in given:
        return "loads with arguments `torch.export.load` does not take"
    load, imports = ctx.spell("torch.export.load")
    out.imports += imports
    args = ctx.source(given["f"])
    if "_extra_files" in given:
        args += f", extra_files={ctx.source(given['_extra_files'])}"
        as_bytes = loaded_as_bytes(ctx, call, given["_extra_files"])
        if as_bytes is not None:
            out.edits.append(as_bytes)
    text = f"{load}({args}).module()"
    if "map_location" in given:
        text += f".to({ctx.source(given['map_location'])})"
    out.edits.append(Edit(*ctx.span(call), text))
    out.members.append((LOAD_RULE, call))
    return ""


def _inference_pass(ctx, call: ast.Call, parents, out: Rewrite) -> str:
    """`m = torch.jit.freeze(m)`: a TorchScript-only pass; the exported module has none, so
    the statement goes (as MIG116's own fix would)."""
    holder = parents.get(id(call))
    target = call.args[0] if len(call.args) == 1 and not call.keywords else None
    if not (
        isinstance(holder, ast.Assign)
        and len(holder.targets) == 1
        and isinstance(holder.targets[0], ast.Name)
        and isinstance(target, ast.Name)
        and target.id == holder.targets[0].id
    ):
        return f"passes what it loads or scripts through `{ctx.source(call.func)}` other than as `m = {ctx.source(call.func)}(m)`"
    out.edits.append(Edit(*ctx.line_span(holder), ""))
    out.members.append((INFERENCE_PASS_RULE, call))
    return ""


def _uses(ctx, func, name: str, parents, out: Rewrite) -> str:
    """What the body does with the module it made: calls become `.module()` calls; a save
    or a return of it stays as written (the program is saved, or returned)."""
    for node in walk_tree(func):
        if not (isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load)):
            continue
        holder = parents.get(id(node))
        if isinstance(holder, ast.Call) and holder.func is node:
            end = ctx.end(node)
            out.edits.append(Edit(end, end, ".module()"))
        elif isinstance(holder, ast.Return):
            continue
        elif isinstance(holder, ast.Call) and holder.args[:1] == [node]:
            if ctx.qualname(holder.func) != SAVE:
                return f"hands what it scripts to `{ctx.source(holder.func)}`"
        else:
            return f"uses what it scripts other than by calling, saving or returning it (`{name}`)"
    return ""


def _change(w: Wrapper, made: set[str]) -> str:
    """The API change outside callers see."""
    parts = []
    if made or w.added_example:
        parts.append(
            f"needs example `{w.export_example}` (export specialises to their shapes) and returns a "
            "`torch.export.ExportedProgram` (run it with `.module()`)"
        )
    if w.saves is not None and not made:
        parts.append("takes a `torch.export.ExportedProgram`")
    if w.producer is not None:
        parts.append("writes a `torch.export.save` archive")
    if w.consumer is not None:
        parts.append(
            "reads `torch.export.save` archives and gives the program's `.module()`; archives "
            "of its TorchScript version no longer load (`migrate convert` converts them)"
        )
    return f"`{w.name}` keeps its name and parameters; it now " + ", ".join(parts)


def result_saves(ctx: PythonContext, call: ast.Call) -> tuple[list[tuple[str, tuple, tuple]], str]:
    """A capture call of a wrapper that moves to torch.export, bound to a name: the saves
    of that name in its scope (`torch.jit.save(name, path[, extra])`, `name.save(path)`)
    as (finding key, edits, imports) writing the program with `torch.export.save`, or why
    one cannot be (then the wrapper must wait: its program would reach a TorchScript save)."""
    bound = bound_name(ctx, call)
    if bound is None:
        return [], ""
    scope = ctx.table.scope_for(call)
    uses, problem = name_uses(ctx, bound[0], bound[1], scope)
    if problem is not None:
        return [], problem
    out = []
    for use in uses:
        holder = parent(ctx, use)
        fix = FixBuilder()
        if isinstance(holder, ast.Call) and holder.args[:1] == [use]:
            if ctx.qualname(holder.func) != SAVE:
                continue
            save, code = holder, SAVE_RULE
            jit_save_edits(ctx, holder, scope, fix)
        elif isinstance(holder, ast.Attribute) and holder.attr == "save":
            save, code = parent(ctx, holder), SAVE_RULE
            if not (isinstance(save, ast.Call) and save.func is holder):
                continue
            method_save(ctx, save, use.id, scope, fix)  # type: ignore[attr-defined]
        else:
            continue
        if not fix.auto:
            return [], fix.problem or ""
        line, column = ctx.index.position(ctx.start(save))
        imports = tuple(ImportSpec.parse(i) for i in fix.imports)
        out.append((f"{code}@{line}:{column + 1}", tuple(fix.edits), imports))
    return out, ""
