"""MIG121: calls of the repository's own TorchScript wrappers (issue 27 item 7).

A wrapper (migrate.checks.repository_wrappers: a function whose parameter is scripted, traced,
saved or loaded) makes each of its call sites a capture, producer or consumer, wherever it
is called. Which functions are wrappers is a repository fact: each parsed file tells its
wrappers, its re-exports and the functions it calls (migrate.analysis.repository_facts);
files that call a wrapper of another module are analysed again with the whole repository's
wrappers. Files the prefilter skipped (a test module that never says `jit`) tell their
`from ... import` lines.

Each wrapper also gets one finding at its definition, the group's: the reason its callers
stay TorchScript (public API, inputs unknown), said once there and named at each call.
"""

from __future__ import annotations

import ast
import dataclasses
from collections.abc import Callable, Collection

from migrate.analysis.astwalk import walk_lines
from migrate.analysis.repository_facts import FileFacts, RepositoryFacts
from migrate.analysis.textsearch import WholeWords
from migrate.checks._drop_route import eager_route
from migrate.checks._wrapper_export import export_rewrites, result_saves
from migrate.checks.base import Edit, GroupFix, PythonCheck, PythonContext
from migrate.checks.export.apis import LOAD_RULE, SAVE_RULE, SCRIPT_RULE, TRACE_RULE
from migrate.checks.repository_wrappers import (
    RoundTrip,
    Wrapper,
    find_wrappers,
    repository_wrappers,
    round_trip,
)
from migrate.findings import Applicability, Fix, FixKind

__all__ = ["RepositoryWrapperCall", "hold_reason"]

_ROLE_WORDS = {"capture": "a capture", "producer": "a producer", "consumer": "a consumer"}


class RepositoryWrapperCall(PythonCheck):
    code = "MIG121"
    remember = r"[ \t]*(from[ \t]+[.\w]+[ \t]+import[ \t]+(?:\([^)]*\)|[^\n#;]+))"
    remember_imports = True

    def prepare_pass(self, repo: RepositoryFacts) -> None:
        known = repository_wrappers(repo)
        if known.wrappers:
            known.prepare()

    def rerun(
        self,
        repo: RepositoryFacts,
        facts: FileFacts | None,
        remembered: set[str],
        module: Callable[[], str] = str,
        text: Callable[[], str] | None = None,
    ) -> bool:
        known = repository_wrappers(repo)
        if not known.wrappers:
            return False
        if facts is not None:
            own = facts.wrappers()
            mine = known.mine(own)  # the others are foreign to this file
            for qual in facts.calls():  # what it imports or calls
                if not known.may_reach(qual):
                    continue
                target = known.index.resolve(qual)
                if target not in mine and known.may_call(target, text):
                    return True
            # A file defining wrappers: a definition is reported once a caller is known; phase 1
            # knew only the file's own calls, so only a wrapper used elsewhere changes it.
            return any(map(known.uses, mine - set(facts.calls())))
        # A file the prefilter skipped: its `from` lines that name a wrapper or a module
        # holding one (a word search first: most name none).
        words = known.words
        if words is None or not words.search("\n".join(remembered)):
            return False
        lines = [line for line in remembered if line.startswith("from") and words.search(line)]
        return bool(lines) and known.imported_by(module(), lines, text)

    def on_end(self, ctx: PythonContext) -> None:
        local = find_wrappers(ctx)
        module = ctx.table.module
        if local:
            ctx.facts.tell_wrappers({w.encode() for w in local.values()})
        scope = ctx.table.module_scope
        exports = {
            f"{module}.{name}={ctx.table.canonical(qual)}"
            for name, qual in scope.imports.items()
            if module and not qual.startswith("torch")
        }
        if exports:
            ctx.facts.tell_reexports(exports)
        known = repository_wrappers(ctx.repo_facts)
        mine = {w.qual: w for w in local.values()}
        index = known.index
        imported = _imported(ctx)
        # What the file imports from elsewhere tells the repository pass whether it may call
        # a wrapper found in another file (then it is analysed again, with the wrappers
        # known); only the names that can reach a known wrapper, and this file's own, are
        # looked for among its calls (in the first pass: its own only).
        calls = set(imported.values())
        reach = {name for name, qual in imported.items() if known.reaches(qual)} | set(local)
        sites: list[tuple[ast.Call, Wrapper]] = []
        found_calls = _repository_calls(ctx, local, reach, known.callable_names) if reach else []
        for node, qual in found_calls:
            calls.add(qual)
            target = index.resolve(qual)
            found = mine.get(target) or known.wrappers.get(target)
            # A call that passes nothing the wrapper scripts, saves or loads (`main()` with
            # its default path) is no capture, producer or consumer.
            if found is not None and found.call_roles(node):
                sites.append((node, found))
        if calls:
            ctx.facts.tell_calls(calls)
        called = {w.qual for _, w in sites}
        exported = self._export_group(ctx, local)
        for w in local.values():
            if not w.derived and w.qual not in exported:
                self._definition(ctx, w, w.qual in called or known.uses(w.qual))
        for call, w in sorted(sites, key=lambda s: (s[0].lineno, s[0].col_offset)):
            self._call_site(ctx, call, w)

    # ---- findings ---------------------------------------------------------------------
    def _definition(self, ctx: PythonContext, w: Wrapper, called: bool) -> None:
        """The group's finding, said once: only for a wrapper the repository calls or
        imports (a function that scripts its parameter and is called nowhere is no
        wrapper of anything), or for a helper this run rewrites."""
        node = next(
            s
            for s in ctx.tree.body
            if isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef) and s.lineno == w.line
        )
        start = ctx.start(node)
        end = ctx.text.index(node.name, start) + len(node.name)
        head = (
            f"`{w.name}` is a TorchScript wrapper: it {w.describe()}; each call is migrated with it"
        )
        intent = self.options.get("intent")
        found, why = round_trip(ctx, w)
        if found is not None and intent == "drop":
            self._rewrite(ctx, w, node, found, start, end, head)
            return
        if not called:
            return
        reason = hold_reason(w, intent, found is not None, why)
        refused = getattr(self, "_export_refused", None)
        if intent == "drop" and w.public and refused:
            reason = f"Not rewritten: it cannot move to torch.export here: {refused}"
        elif intent is None and w.public and refused:
            reason = (
                "Not rewritten: it is public API (users call it and get TorchScript back) and "
                f"cannot move to torch.export as written: {refused}"
            )
        ctx.add(
            self.rule,
            start,
            end,
            f"{head}. {reason}",
            symbol=w.qual,
            fix=FixKind.ASSISTED,
            role="wrapper",
            wrapper=w.qual,
            # Its body (plan.wrappers.join_wrapper_calls: under drop, fixed with the findings
            # there when each is written on its own).
            wrapper_file=w.display,
            body=f"{w.line}-{w.end or w.line}",
            drop=intent == "drop",
        )

    def _export_group(self, ctx: PythonContext, local: dict[str, Wrapper]) -> set[str]:
        """Under intent drop, the file's public wrappers move to torch.export together, as one
        unsafe group (migrate.checks._wrapper_export); the qualnames reported so."""
        self._export_refused = None
        public = [w for w in local.values() if w.public and not w.derived]
        if not public:
            return set()
        rewrites, why = export_rewrites(ctx, public)
        if rewrites is None:
            self._export_refused = why
            return set()
        if self.options.get("intent") != "drop":
            return set()
        members: list[tuple[str, ast.AST]] = []
        for r in rewrites:
            members += [(self.code, r.node), *r.members]
        group = GroupFix(members)
        keys = group.member_keys(ctx)
        for r in rewrites:
            w = r.wrapper
            start = ctx.start(r.node)
            end = ctx.text.index(r.node.name, start) + len(r.node.name)
            wanted = {(code, *ctx.index.position(ctx.start(n))) for code, n in r.members}
            ctx.add(
                self.rule,
                start,
                end,
                f"`{w.name}` is a TorchScript wrapper: it {w.describe()}; under intent drop "
                f"it moves to torch.export with the other wrappers of this file, and every call "
                f"in the repository with it. API change for outside callers: {r.change}. "
                "Unsafe: an exported program is specialised to its example's shapes and "
                "refuses what export cannot capture",
                symbol=w.qual,
                edits=r.edits,
                imports=tuple(dict.fromkeys(r.imports)),
                applicability="unsafe",
                group=group,
                fix=FixKind.AUTO,
                role="wrapper",
                wrapper=w.qual,
                **_eager_fallback(ctx, r.members),
            )
            for i, f in enumerate(ctx.findings):
                if (f.rule, f.line, f.column - 1) in wanted:
                    # Under drop a capture the tool could only take the eager route for
                    # keeps that route, should the export wait (no example at a call).
                    eager = f.get("route") == "eager" and f.autofix is not None
                    fallback = (f.message.split("; ", 1)[1], f.autofix) if eager else None
                    ctx.findings[i] = dataclasses.replace(
                        f,
                        fix=FixKind.AUTO,
                        message=f"{f.message.split('; ')[0]}; rewritten with its wrapper "
                        f"`{w.name}` (MIG121 at line {w.line}): it moves to torch.export",
                        autofix=Fix((), (), Applicability.UNSAFE, group.name, keys),
                        data=(
                            *(kv for kv in f.data if kv[0] != "route"),
                            ("wrapper_body", w.qual),
                            *((("drop_fallback", fallback),) if fallback else ()),
                        ),
                    )
        return {w.qual for w in public}

    def _rewrite(self, ctx, w, node, found: RoundTrip, start: int, end: int, head: str) -> None:
        """The helper becomes an export round trip; its body findings join the group."""
        export, imports = ctx.spell("torch.export.export")
        module = "" if found.save is not None else ".module()"
        target = ctx.source(found.capture.args[0]) if found.capture.args else w.params[0]
        edits = [Edit(*ctx.span(found.capture), f"{export}({target}, {found.inputs}){module}")]
        members: list[tuple[str, ast.AST]] = [(self.code, node), (SCRIPT_RULE, found.capture)]
        if found.save is not None and found.load is not None:
            save, more = ctx.spell("torch.export.save")
            load, again = ctx.spell("torch.export.load")
            imports = (*imports, *more, *again)
            buffer = ctx.source(
                found.load.args[0] if found.load.args else found.load.keywords[0].value
            )
            edits.append(Edit(*ctx.span(found.save.func), save))
            edits.append(Edit(*ctx.span(found.load), f"{load}({buffer}).module()"))
            members += [(SAVE_RULE, found.save), (LOAD_RULE, found.load)]
        group = GroupFix(members)
        how = (
            f"under intent drop it exports instead (`torch.export.export(net, {found.inputs})`"
            + (", `torch.export.save`/`load` through memory" if found.save else "")
            + ", `.module()` called): its callers already pass the example inputs and follow "
            "unchanged. Unsafe: the module it returns is specialised to those inputs' shapes, "
            "and it now checks exportability, not scriptability"
        )
        ctx.add(
            self.rule,
            start,
            end,
            f"{head}; {how}",
            symbol=w.qual,
            edits=edits,
            imports=tuple(dict.fromkeys(imports)),
            applicability="unsafe",
            group=group,
            fix=FixKind.AUTO,
            role="wrapper",
            wrapper=w.qual,
        )
        keys = group.member_keys(ctx)
        wanted = {(code, *ctx.index.position(ctx.start(n))) for code, n in members[1:]}
        for i, f in enumerate(ctx.findings):
            if (f.rule, f.line, f.column - 1) in wanted:
                ctx.findings[i] = dataclasses.replace(
                    f,
                    fix=FixKind.AUTO,
                    message=f"{f.message.split('; ')[0]}; rewritten with its wrapper "
                    f"`{w.name}` (MIG121 at line {w.line}): an export round trip",
                    autofix=Fix((), (), Applicability.UNSAFE, group.name, keys),
                )

    def _call_site(self, ctx: PythonContext, call: ast.Call, w: Wrapper) -> None:
        roles = w.call_roles(call)
        if not roles:
            return
        what = " and ".join(_ROLE_WORDS[r] for r in roles)
        args = w.bound(call) or {}
        path_role = w.producer if "producer" in roles else w.consumer
        path = args.get(path_role.param) if path_role is not None else None
        of = f" of `{ctx.source(path)}`" if path is not None and "capture" not in roles else ""
        if path is not None and "capture" in roles:
            of = f" (writes `{ctx.source(path)}`)"
        extra = {}
        example = w.export_example
        given = args.get(example) if example else None
        if (
            self.options.get("intent") == "drop"
            and "capture" in roles
            and example is not None
            and w.bound(call) is not None
            and (given is None or (isinstance(given, ast.Constant) and given.value is None))
        ):
            # An export of it needs an example this call does not pass: the planner finds
            # one (migrate.facts.wrappers.call_example) or holds the wrapper's group.
            extra["example_param"] = example
        if self.options.get("intent") == "drop" and "capture" in roles and example is not None:
            # What the call makes is an ExportedProgram once the wrapper moves: its saves
            # here move with it (plan.wrappers.join_wrapper_calls), or the wrapper waits.
            saves, problem = result_saves(ctx, call)
            if problem:
                extra["result_problem"] = problem
            elif saves:
                extra["result_saves"] = tuple(saves)
        ctx.report(
            self.rule,
            call,
            f"`{w.name}(...)` calls the repository's TorchScript wrapper `{w.qual}` "
            f"({w.display}:{w.line}), which {w.describe()}: this call is {what}{of}; it "
            f"moves with the wrapper (see its finding at {w.display}:{w.line})",
            symbol=w.qual,
            fix=FixKind.ASSISTED,
            role="+".join(roles),
            wrapper=w.qual,
            # The wrapper's body (plan.wrappers.join_wrapper_calls: fixed with it).
            wrapper_file=w.display,
            body=f"{w.line}-{w.end or w.line}",
            captures_with=w.capture.api if w.capture is not None and "capture" in roles else None,
            **extra,
        )


def _eager_fallback(ctx: PythonContext, members: list[tuple[str, ast.AST]]) -> dict:
    """The wrapper's own eager route under drop: when every capture in its body can become
    the object it captures, it keeps its signature and its calls pass nothing new (export
    waits for example inputs its calls do not pass); it rides on those captures."""
    if ctx.intent != "drop":
        return {}
    captures = [(code, n) for code, n in members if code in (SCRIPT_RULE, TRACE_RULE)]
    for _, call in captures:
        if not (isinstance(call, ast.Call) and call.args):
            return {}
        api = "script" if (ctx.qualname(call.func) or "").endswith("script") else "trace"
        if eager_route(ctx, call, call.args[0], api).problem is not None:
            return {}
    if not captures:
        return {}
    message = (
        "under intent drop its body's captures take the eager route (export waits for "
        "example inputs its calls do not pass): it keeps its signature and returns the "
        "object it was given, and its calls follow unchanged"
    )
    rides = tuple((ctx.path, key) for key in GroupFix(captures).member_keys(ctx))
    return {"drop_fallback": (message, Fix((), (), Applicability.UNSAFE, rides=rides))}


def _imported(ctx: PythonContext) -> dict[str, str]:
    """{local name: qualname} of what the file's imports (in any scope) and module-level
    aliases bind, torch's left out."""
    table = ctx.table
    out: dict[str, str] = {}
    for scope in table.import_scopes():
        for local_name, qual in scope.imports.items():
            if qual != "torch" and not qual.startswith("torch."):
                out.setdefault(local_name, qual)
    module_scope = table.module_scope
    for name, value in module_scope.aliases.items():
        qual = table.qualname(value, module_scope)
        if qual is not None and not qual.startswith("torch"):
            out.setdefault(name, qual)
    return out


def _repository_calls(
    ctx: PythonContext, local: dict[str, Wrapper], reach: set[str], callable_names: Collection[str]
) -> list[tuple[ast.Call, str]]:
    """Each call whose first name is one of `reach` (a name bound to a wrapper or to a module
    holding one, or a wrapper of this file), with its qualname (not a torch one), in
    `ast.walk` order. Only the statements on lines spelling such a name are walked. A star
    import hands on names the file does not spell in an import: then a call is also looked
    at when its last name is one a wrapper is called by (`callable_names`, its name or a
    name it is imported as: resolving through the index changes a last part only so)."""
    table = ctx.table
    star = bool(table.module_scope.star_modules)
    words = (reach | set(callable_names)) if star else reach
    out = []
    for node in walk_lines(ctx.tree, WholeWords(words).lines(ctx.text)):
        if type(node) is not ast.Call:
            continue
        func = node.func
        base = func
        while isinstance(base, ast.Attribute):
            base = base.value
        if not isinstance(base, ast.Name):
            continue
        if base.id not in reach:
            last = func.attr if isinstance(func, ast.Attribute) else base.id
            if not star or last not in callable_names:
                continue
        qual = ctx.qualname(func)
        if qual is None and isinstance(func, ast.Name) and func.id in local:
            if table.binding(func.id, table.scope_for(func)) is None:
                qual = local[func.id].qual
        if qual is not None and not qual.startswith("torch"):
            out.append((node, qual))
    return out


def hold_reason(w: Wrapper, intent: str | None, rewritable: bool, why: str) -> str:
    """Why the wrapper and its callers stay TorchScript, said once, at the wrapper."""
    if intent == "keep-scriptable":
        job = (
            "produces TorchScript for the repository's users"
            if w.public
            else "checks scriptability"
        )
        return f"It stays: it {job} (intent keep-scriptable)"
    if rewritable:
        return (
            "Not rewritten: it checks that modules script; under `--intent drop` it becomes an "
            "export round trip (`torch.export.export(net, inputs)`, `.module()`) and its callers "
            "follow unchanged"
        )
    if w.public:
        return (
            "Not rewritten: it is public API (users call it and get TorchScript back); under "
            "`--intent drop` it moves to torch.export (`torch.export.export(model, inputs)`, "
            "`torch.export.save`/`load`) with every call, an API change for its users, or keep "
            "it under `--intent keep-scriptable`"
        )
    return (
        f"Not rewritten: {why}; rewrite it to export with example inputs "
        "(`torch.export.export(model, inputs)`) and every caller follows"
    )
