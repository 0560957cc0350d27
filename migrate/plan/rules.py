"""The planning rules: each asks the repository's facts and the fixes the run will write,
and names the fixes that would leave the tree inconsistent, with why. `PLANNING_RULES` is
the order `plan_fixes` asks them in."""

from __future__ import annotations

import re

from migrate.findings import Applicability, Finding
from migrate.plan.context import (
    CAPTURE_RULES,
    CONSUMER_RULES,
    PRODUCER_RULES,
    SCRIPT_RULES,
    TRACE_RULES,
    TYPING_RULES,
    WARNING_RULES,
    WRAPPER_CALLS,
    FindingKey,
    PlanningContext,
    PlanningRule,
    finding_key,
)
from migrate.plan.wrappers import wrappers_wait_for_examples
from migrate.registry import all_rules, codes_with

# What scripts or traces code while it stays (the questions `is_scripting()`/`is_tracing()`
# keep answering): findings at these symbols that this run does not rewrite.
_SCRIPTING_SYMBOLS = frozenset(
    {
        "torch.jit.script",
        "torch.jit.script_method",
        "torch.jit.ScriptModule",
        "torch.jit.CompilationUnit",
    }
)
_TRACING_SYMBOLS = frozenset({"torch.jit.trace", "torch.jit.trace_module"})


def tracer_filters_stay_while_traces_do(ctx: PlanningContext) -> dict[FindingKey, str]:
    """MIG118: a TracerWarning filter is dead only when no trace stays in its file: neither
    a `torch.jit.trace` nor a call of the repository's own wrapper that traces."""
    holds: dict[FindingKey, str] = {}
    filters = _with_fix(ctx, codes_with("tracer-filter"))
    for flt in filters:
        if not all(code in ctx.selected for code in TRACE_RULES):
            holds[finding_key(flt)] = (
                "the tool cannot tell whether a trace stays in this file while "
                f"{'/'.join(TRACE_RULES)} are not selected"
            )
            continue
        staying = [
            f
            for f in ctx.by_path(flt.path)
            if (f.rule in TRACE_RULES or f.get("captures_with") in _TRACING_SYMBOLS)
            and finding_key(f) not in ctx.written
        ]
        if staying:
            lines = ", ".join(str(f.line) for f in staying)
            plural, single = "s" * (len(staying) > 1), "s" * (len(staying) == 1)
            holds[finding_key(flt)] = (
                f"the trace{plural} on line{plural} {lines} stay{single} TorchScript and "
                f"still warn{single}"
            )
    return holds


def _at(ctx: PlanningContext, rules: tuple[str, ...], display: str, line: int, column: int):
    return [
        f
        for f in ctx.findings
        if f.rule in rules and f.path == display and f.line == line and f.column == column
    ]


def _with_fix(ctx: PlanningContext, rules: tuple[str, ...]) -> list[Finding]:
    """The findings of these rules that still carry a fix."""
    return [f for f in ctx.findings if f.rule in rules and f.autofix is not None]


def _where(span) -> str:
    return f"{span.display}:{span.line}"


def _site_where(site) -> str:
    """Where a producer or consumer is; a call of the repository's own wrapper says so."""
    kind, _, wrapper = site.api.partition(" ")
    through = f" (a call of the wrapper `{wrapper}`, MIG121)" if kind == "wrapper" else ""
    return f"{_where(site.span)}{through}"


# A call of the repository's own wrapper (MIG121) writes or reads as its wrapper does: it
# moves exactly when it is joined to its wrapper's rewrite (join_wrapper_calls).
_WRITERS = (*PRODUCER_RULES, *WRAPPER_CALLS)
_READERS = (*CONSUMER_RULES, *WRAPPER_CALLS)


def _stays(ctx: PlanningContext, findings: list[Finding]) -> bool:
    """No finding at a site, or one whose fix this run does not write: it stays TorchScript.
    A capture in a test skipped as only checking TorchScript (an earlier run's skip) never
    runs: it does not stay."""
    if any(f.get("in_skipped_test") for f in findings):
        return False
    return not findings or not any(finding_key(f) in ctx.written for f in findings)


def loaders_move_with_their_writers(ctx: PlanningContext) -> dict[FindingKey, str]:
    """A loader reads the new format only when every writer of its file writes it, in the
    same run; a writer changes format only when every reader of its file follows."""
    facts = ctx.facts
    if facts is None:
        return {}
    holds: dict[FindingKey, str] = {}
    for f in ctx.findings:
        # A load the facts cannot place (called through an alias from another module...).
        if f.rule in CONSUMER_RULES and f.autofix is not None and not f.get("loaded_by"):
            if facts.site_at(f.path, f.line, f.column) is None:
                holds[finding_key(f)] = (
                    "the tool cannot follow which file this load reads, nor what writes it"
                )
    for site in facts.sites:
        rules = CONSUMER_RULES if site.role == "consumer" else PRODUCER_RULES
        mine = [f for f in _at(ctx, rules, *site.span.start) if f.autofix is not None]
        # A wrapper's own save or load (its path a parameter) moves with the wrapper: the
        # files are its calls' (MIG121), each a site of its own.
        mine = [f for f in mine if not f.get("wrapper_body")]
        if not mine or not any(finding_key(f) in ctx.written for f in mine):
            continue
        reason = None
        if site.role == "consumer":
            producers = facts.producers_of(site)
            if site.key is None and site.basename is None:
                reason = _runtime_path_hold(ctx, mine[0])
            elif not producers:
                reason = (
                    f"nothing in the repository writes `{site.file_name}`: convert that archive "
                    "with `migrate convert` first, then load the file it writes"
                )
            else:
                staying = [p for p in producers if _stays(ctx, _at(ctx, _WRITERS, *p.span.start))]
                if staying:
                    reason = (
                        f"`{site.file_name}` is written by {_site_where(staying[0])}, which "
                        "stays TorchScript in this run"
                    )
        else:
            consumers = facts.consumers_of(site)
            staying = [c for c in consumers if _stays(ctx, _at(ctx, _READERS, *c.span.start))]
            if staying:
                reason = (
                    f"`{site.file_name}` is read by {_site_where(staying[0])}, which stays "
                    "TorchScript in this run"
                )
        if reason is None and site.file_name is not None:
            reason = _renamed_apart(facts, site)
        if reason is not None:
            for f in mine:
                holds[finding_key(f)] = reason
    return holds


def _runtime_path_hold(ctx: PlanningContext, load: Finding) -> str | None:
    """A load whose path is chosen at run time: linked, by the files a `migrate record` run
    saw it read, to the saves that wrote them. It moves to `torch.export.load`
    once every one of those saves is migrated in this run; else it is held, naming one."""
    writers = load.get("recorded_writers")
    if writers:
        staying = [w for w in writers if _stays(ctx, _at_line(ctx, PRODUCER_RULES, w))]
        if not staying:
            return None
        return (
            f"it reads a path chosen at run time: the recorded run loaded "
            f"{_files(load.get('recorded_loaded'))}, written by the save at "
            f"{', '.join(staying)}, which stays TorchScript in this run"
        )
    reason = (
        "it reads a path chosen at run time; the tool cannot see what writes it. "
        "Once that file is converted (`migrate convert`), load the `.pt2`/`.pte`"
    )
    if load.get("recorded_loaded"):
        reason += (
            f"; the recorded run loaded {_files(load.get('recorded_loaded'))}, which no "
            "recorded save wrote"
        )
    return reason


def _files(loaded, limit: int = 2) -> str:
    """`a`, `b` and 3 more: the files a recorded load read."""
    loaded = list(loaded or ())
    more = len(loaded) - limit
    return ", ".join(f"`{p}`" for p in loaded[:limit]) + (f" and {more} more" if more > 0 else "")


def _at_line(ctx: PlanningContext, rules: tuple[str, ...], where: str) -> list[Finding]:
    """The findings of these rules at a recorded `path:line` (a recorded path is relative to
    the folder `migrate record` ran in; a finding's, to the scan's)."""
    path, _, line = where.rpartition(":")
    return [
        f
        for f in ctx.findings
        if f.rule in rules
        and str(f.line) == line
        and (f.path == path or f.path.endswith("/" + path) or path.endswith("/" + f.path))
    ]


def recorded_readers_follow(ctx: PlanningContext) -> dict[FindingKey, str]:
    """The other way: a save that a recorded run-time-path load read from changes
    format only when that load moves too."""
    holds: dict[FindingKey, str] = {}
    for load in ctx.findings:
        writers = load.get("recorded_writers")
        if not writers or load.rule not in CONSUMER_RULES or finding_key(load) in ctx.written:
            continue
        why = f"in the recorded run the file it wrote was read by the load at {_where_f(load)}"
        _hold_linked(ctx, holds, PRODUCER_RULES, writers, why)
    return holds


def _where_f(f: Finding) -> str:
    return f"{f.path}:{f.line}, which stays TorchScript in this run"


def _hold_linked(
    ctx: PlanningContext, holds: dict, rules: tuple[str, ...], linked, why: str
) -> None:
    """Hold the findings of `rules` at each recorded `path:line` in `linked`, saying why."""
    for where in linked:
        for f in _at_line(ctx, rules, where):
            holds.setdefault(finding_key(f), why)


def lite_saves_move_with_their_captures(ctx: PlanningContext) -> dict[FindingKey, str]:
    """A lite save of a parameter lowers it as a program only when every capture
    the recorded run saw it save is exported in this run; a capture passed to such a save
    is exported only when the save moves too."""
    holds: dict[FindingKey, str] = {}
    for save in ctx.findings:
        captures = save.get("recorded_programs")
        if not captures or save.rule not in codes_with("lite-save"):
            continue
        if finding_key(save) not in ctx.written:
            why = f"in the recorded run its result was saved by the lite save at {_where_f(save)}"
            _hold_linked(ctx, holds, CAPTURE_RULES, captures, why)
            continue
        for where in captures:
            found = _at_line(ctx, CAPTURE_RULES, where)
            if _stays(ctx, found) or any(f.get("route") == "eager" for f in found):
                holds[finding_key(save)] = (
                    f"the recorded run saved here the result of the capture at {where}, which "
                    "is not exported in this run"
                )
                break
    return holds


def _renamed_apart(facts, site) -> str | None:
    """Writers and readers of one file must rename it alike: all at a literal in the call,
    or all through one shared constant (which the rewrite leaves as it is)."""
    linked = [site, *facts.producers_of(site), *facts.consumers_of(site)]
    # The rewrite renames a literal written in the call; a constant defined elsewhere stays.
    inline = {
        s.basename is not None
        or (s.path_def is not None and s.path is not None and _inside(s.path_def, s.path))
        for s in linked
    }
    if len(inline) > 1:
        return (
            f"`{site.file_name}` is named at the call in some places and through a constant in "
            "others: the rename to the new extension would split them; name it one way"
        )
    return None


def _inside(inner, outer) -> bool:
    return (
        inner.display == outer.display
        and (inner.line, inner.column)
        >= (
            outer.line,
            outer.column,
        )
        and (inner.end_line, inner.end_column) <= (outer.end_line, outer.end_column)
    )


def captures_move_with_every_use(ctx: PlanningContext) -> dict[FindingKey, str]:
    """A capture whose value is used outside the scope the rewrite edits (imported by another
    module, read in another function) would hand those uses an ExportedProgram."""
    facts = ctx.facts
    if facts is None:
        return {}
    holds: dict[FindingKey, str] = {}
    for f in _with_fix(ctx, CAPTURE_RULES):
        if f.get("route") == "skip-test":  # the capture is left as it is, in a skipped test
            continue
        uses = facts.external_uses(f.path, f.line, f.column)
        if f.get("route") == "eager":  # the module itself: calls and imports of it still work
            uses = [u for u in uses if u.kind not in ("call", "import")]
            if ctx.intent == "drop":  # and whatever reads it gets the eager object it captured
                uses = [u for u in uses if u.torchscript_only]
        if not uses:
            continue
        special = [u for u in uses if u.torchscript_only]
        if ctx.intent and not special and f.get("target") in ("function", "class"):
            # With an intent the plain function or class is what its importers get: they
            # call it as they called the scripted one (eager behaviour, as in a script that
            # stays scripted's own Python). Without one, each site stays as before.
            continue
        if not special and f.get("target") == "class":
            continue  # `torch.jit.script(C)` returns `C` itself: importers get the same class
        use = special[0] if special else uses[0]
        if special:
            why = f"`.{use.attribute}` only exists on a TorchScript module"
        elif use.kind == "import" or use.module and use.span.display != f.path:
            why = "another module imports it and would get an ExportedProgram"
        else:
            why = "it is read outside the scope the rewrite follows"
        holds[finding_key(f)] = f"its result is used at {_where(use.span)}: {why}"
    return holds


def captures_wait_for_their_forward(ctx: PlanningContext) -> dict[FindingKey, str]:
    """export runs forward as Python: a forward that branches on tensor values (a MIG131
    finding that stays) or calls an @torch.jit.ignore/unused method cannot be exported."""
    facts = ctx.facts
    if facts is None:
        return {}
    holds: dict[FindingKey, str] = {}
    for f in _with_fix(ctx, CAPTURE_RULES):
        if f.get("route") in ("eager", "skip-test"):  # eager calls run forward as before
            continue
        if finding_key(f) not in ctx.written:  # not written anyway (an unsafe fix): say that
            continue
        captured = facts.class_of_capture(f.path, f.line, f.column)
        if captured is None:
            continue
        if captured.returns_class:
            holds[finding_key(f)] = (
                f"`{captured.class_name}.forward` returns `{captured.returns_class}` (its "
                "annotation), a class export cannot return: only tensors, numbers and their "
                "containers"
            )
            continue
        if captured.blockers and not _judged_by_running(ctx, f):
            b = captured.blockers[0]
            holds[finding_key(f)] = (
                f"`{captured.class_name}.forward` reaches `{b.method}` ({b.display}:{b.line}), "
                f"marked `@{b.decorator}`: export would run its Python"
            )
            continue
        reads = [r for r in captured.data_reads if not _guarded_away(ctx, r.guard)]
        if reads:  # the check sees its own file only; the class may be elsewhere
            r = reads[0]
            holds[finding_key(f)] = (
                f"`{captured.class_name}.{r.method}` reads tensor data into Python at "
                f"{r.display}:{r.line} (`{r.read}`): export specializes on the example's data "
                "there, or fails"
            )
            continue
        methods = [m for m in captured.methods if not _guarded_away(ctx, m.guard)]
        spans = [m.span for m in methods] or ([captured.forward] if captured.forward else [])
        for branch in ctx.findings:
            if branch.rule not in codes_with("data-branch") or finding_key(branch) in ctx.written:
                continue
            if any(_covers(span, branch) for span in spans):
                holds[finding_key(f)] = (
                    f"`{captured.class_name}` branches on tensor values at "
                    f"{branch.path}:{branch.line} (MIG131), which stays"
                )
                break
    return holds


def _guarded_away(ctx: PlanningContext, guard: tuple[str, int, int] | None) -> bool:
    """A read under `if not torch.jit.is_scripting():` stays out of export once that guard's
    MIG110 fix turning it into `torch.compiler.is_compiling()` (under drop) is written in this
    run; folded to False, or left, the guard lets export run it."""
    if guard is None:
        return False
    if not guard[0]:  # `not torch.compiler.is_compiling()`: export skips it anyway
        return True
    return any(
        finding_key(g) in ctx.written
        and g.autofix is not None
        and any(e.text.endswith("is_compiling") for e in g.autofix.edits)  # not folded to False
        for g in _at(ctx, codes_with("guard"), *guard)
    )


def _judged_by_running(ctx: PlanningContext, f: Finding) -> bool:
    """Under `drop` an unsafe export that reaches an `@torch.jit.ignore/unused` method is
    written, not held: non-strict export runs that method's Python as eager mode did (its
    checks, warnings and raises, at the example's shapes), and whether the exported program
    still matches is for the run's tests (`--test`) to say, not for a static guess. Without
    an intent (or with `keep-scriptable`) the hold stays: nothing asked for the export."""
    return ctx.intent == "drop" and f.applicability is Applicability.UNSAFE


def branches_wait_for_scripts(ctx: PlanningContext) -> dict[FindingKey, str]:
    """A `torch.cond` rewrite (MIG131) of a forward that a staying `torch.jit.script` still
    compiles, or a staying trace still runs, would break it: TorchScript has no nested
    functions, and the tracer cannot trace `torch.cond`."""
    facts = ctx.facts
    branches = _with_fix(ctx, codes_with("data-branch"))
    if facts is None or not branches:
        return {}
    holds: dict[FindingKey, str] = {}
    for capture in facts.captures:
        start = capture.call.start
        rules = _capture_rules_of(capture.api)
        if not rules or not _stays(ctx, _at(ctx, rules, *start)):
            continue
        captured = facts.class_of_capture(*start)
        if captured is None:
            continue
        spans = [m.span for m in captured.methods] or (
            [captured.forward] if captured.forward else []
        )
        for branch in branches:
            if finding_key(branch) not in ctx.written:  # an unsafe fix not asked for
                continue
            if any(_covers(span, branch) for span in spans):
                holds.setdefault(
                    finding_key(branch),
                    f"`{captured.class_name}` is still "
                    f"{'scripted' if rules == SCRIPT_RULES else 'traced'} at {_where(capture.call)}, "
                    "and TorchScript cannot take the branch functions of `torch.cond`",
                )
    return holds


def _covers(span, f: Finding) -> bool:
    return span.display == f.path and span.line <= f.line <= span.end_line


def typing_stays_while_scripted(ctx: PlanningContext) -> dict[FindingKey, str]:
    """`@torch.jit.ignore`, `torch.jit.annotate`, `_overload`, `Final`, `Attribute`... tell the
    scripting compiler what to skip or how to type a value: removing them is right only once
    nothing scripts that code. A `torch.jit.script` that stays TorchScript keeps them in the
    files its class can reach (its module and what that imports); when the tool cannot tell
    what it scripts, everywhere. Under `drop`, `is_scripting()` folds on the same terms: a
    script rewritten in this run blocks nothing."""
    if ctx.facts is None:
        return {}
    typed = _with_fix(ctx, TYPING_RULES)
    if ctx.intent == "drop":
        typed += _asking(ctx, "is_scripting")
    return _held_while_captured(ctx, typed, ("torch.jit.script",), SCRIPT_RULES, "scripted")


def questions_fold_once_nothing_stays(ctx: PlanningContext) -> dict[FindingKey, str]:
    """Under `drop`, `is_scripting()`/`is_tracing()` become False once nothing that stays
    scripts / traces the code that asks (decided here for the whole tree, not per file):
    captures are followed to what they reach (above and here); a decorator, a
    `script_method`, a ScriptModule base or a CompilationUnit that stays blocks everywhere."""
    if ctx.intent != "drop" or ctx.facts is None:
        return {}
    holds = _held_while_captured(
        ctx, _asking(ctx, "is_tracing"), tuple(sorted(_TRACING_SYMBOLS)), TRACE_RULES, "traced"
    )
    for name, symbols, rules, does in (
        ("is_scripting", _SCRIPTING_SYMBOLS, SCRIPT_RULES, "scripts"),
        ("is_tracing", _TRACING_SYMBOLS, TRACE_RULES, "traces"),
    ):
        asking = [f for f in _asking(ctx, name) if finding_key(f) not in holds]
        if not asking:
            continue
        missing = [code for code in rules if code not in ctx.selected]
        if missing:
            why = f"the tool cannot tell what still {does} code while {'/'.join(missing)} is off"
        else:
            staying = [
                f
                for f in ctx.findings
                if _compiles(f, symbols)
                and finding_key(f) not in ctx.written
                and ctx.facts.capture_at(f.path, f.line, f.column) is None
            ]
            if not staying:
                continue
            why = (
                f"`{staying[0].symbol}` at {staying[0].path}:{staying[0].line} stays "
                f"({staying[0].rule}), so the repository still {does} code"
            )
        for f in asking:
            holds.setdefault(finding_key(f), why)
    return holds


def executor_switches_go_with_the_last_script(ctx: PlanningContext) -> dict[FindingKey, str]:
    """Under `drop`, a TorchScript executor switch (MIG119, `torch._C._jit_set_*`) goes only
    when nothing in the repository scripts or traces code any more: it is process-wide."""
    switches = _with_fix(ctx, codes_with("executor-switch"))
    if ctx.intent != "drop" or not switches:
        return {}
    symbols = _SCRIPTING_SYMBOLS | _TRACING_SYMBOLS
    staying = [
        f for f in ctx.findings if _compiles(f, symbols) and finding_key(f) not in ctx.written
    ]
    if not staying:
        return {}
    holds: dict[FindingKey, str] = {}
    facts = ctx.facts
    for switch in switches:
        # It applies in its own process: to what stays in a module its file imports, or in
        # a file that imports it (a separate script of the repository runs without it).
        paths = {f.path for f in staying}
        reach = facts.reached(switch.path, paths) if facts is not None else paths
        near = [
            f
            for f in staying
            if f.path in reach or (facts is not None and facts.reached(f.path, {switch.path}))
        ]
        if near:
            holds[finding_key(switch)] = (
                f"`{near[0].symbol}` at {near[0].path}:{near[0].line} stays "
                f"({near[0].rule}), and the setting applies to it"
            )
    return holds


def _compiles(f: Finding, symbols: frozenset[str]) -> bool:
    """A finding at something that scripts or traces code: a `ScriptModule` named in an
    isinstance check or an annotation compiles nothing (only a base class does)."""
    return f.symbol in symbols and f.get("role") in (None, "base")


def _capture_rules_of(api: str) -> tuple[str, ...]:
    """The capture rule(s) whose symbols include `api` (`torch.jit.trace` -> its rule)."""
    rules = all_rules()
    return tuple(code for code in CAPTURE_RULES if rules[code].matches_symbol(api))


def _asking(ctx: PlanningContext, name: str) -> list[Finding]:
    return [f for f in _with_fix(ctx, codes_with("guard")) if f.symbol.rsplit(".", 1)[-1] == name]


def _held_while_captured(
    ctx: PlanningContext,
    typed: list[Finding],
    apis: tuple[str, ...],
    rules: tuple[str, ...],
    verb: str,
) -> dict[FindingKey, str]:
    """Hold each of `typed` that a capture (of `apis`) staying TorchScript can reach."""
    facts = ctx.facts
    holds: dict[FindingKey, str] = {}
    if not typed:
        return holds
    api = apis[0].rsplit(".", 1)[-1]
    for capture in facts.captures:
        if capture.api not in apis:
            continue
        # A finding keeps the first reason it is given: only the others can change.
        typed = [f for f in typed if finding_key(f) not in holds]
        if not typed:
            break
        start = capture.call.start
        if not _stays(ctx, _at(ctx, rules, *start)):
            continue
        captured = facts.class_of_capture(*start)
        if captured is None and ctx.intent == "drop":
            # The repository drops TorchScript: a capture a person must still decide holds
            # what lies beside it, not every file (what it compiles is unknown either way).
            reach = {capture.call.display}
            why = (
                f"the `{capture.api}` at {_where(capture.call)} stays (a person must decide "
                f"it) and may {'compile' if api == 'script' else 'trace'} this code of its file"
            )
        elif captured is None:
            reach = None
            why = (
                f"the `{capture.api}` at {_where(capture.call)} stays and the tool cannot "
                f"tell what it {'compiles' if api == 'script' else 'traces'}; "
                f"the {'scripting compiler' if api == 'script' else 'tracer'} reads this"
            )
        else:
            paths = {f.path for f in typed}
            reach = facts.reached(captured.display, paths)
            why = (
                f"`{captured.class_name}` is still {verb} at {_where(capture.call)}, and the "
                f"{'scripting compiler' if api == 'script' else 'tracer'} reads this"
            )
        for f in typed:
            if reach is None or (
                f.path in reach
                and (captured is None or facts.compiled_with(captured, f.path, f.line))
            ):
                holds.setdefault(finding_key(f), why)
    return holds


def interfaces_go_with_every_use(ctx: PlanningContext) -> dict[FindingKey, str]:
    """Under `drop` an `@torch.jit.interface` class goes with the annotations of its own
    file; a module elsewhere that names it would fail to import: the class stays."""
    holds: dict[FindingKey, str] = {}
    found = [f for f in _with_fix(ctx, codes_with("interface")) if f.get("interface")]
    if not found:
        return holds
    repo = ctx.facts.repo if ctx.facts is not None else None
    if repo is None:
        return {finding_key(f): "the tool cannot tell which modules name it" for f in found}
    for f in found:
        word = re.compile(rf"\b{re.escape(f.get('interface'))}\b")
        for display, other in repo.files.items():
            if display != f.path and other.src.text and word.search(other.src.text):
                holds[finding_key(f)] = f"`{f.get('interface')}` is named in {display} too"
                break
    return holds


def only_what_warns_changes(ctx: PlanningContext) -> dict[FindingKey, str]:
    """Under `keep-scriptable` the repository keeps TorchScript working for its users: a fix
    of a construct that does not warn in the pinned torch (`@torch.jit.ignore`,
    `is_scripting()`, `annotate`, `Final`...) stays, whatever else migrates."""
    if ctx.intent != "keep-scriptable":
        return {}
    return {
        finding_key(f): (
            f"intent keep-scriptable: `{f.symbol}` does not warn in torch 2.13 and TorchScript "
            "still reads it (`--intent drop` removes it)"
        )
        for f in ctx.findings
        if f.autofix is not None and f.rule[:4] in ("MIG1", "MIG2") and f.rule not in WARNING_RULES
    }


def writers_wait_for_native_readers(ctx: PlanningContext) -> dict[FindingKey, str]:
    """A C++/Android/iOS loader (MIG4xx) of the same archive cannot read what the rewritten
    writer would produce: the writer stays until that serving code moves (by hand)."""
    holds: dict[FindingKey, str] = {}
    for f in ctx.findings:
        served = f.get("served_by")
        if f.rule in PRODUCER_RULES and f.autofix is not None and served:
            archive = served[0][0]
            readers = ", ".join(f"{path}:{line} ({rule})" for _, path, line, rule in served)
            loaders = "that loader moves" if len(served) == 1 else "those loaders move"
            holds[finding_key(f)] = (
                f"serving code outside Python loads `{archive}` ({readers}): it stays "
                f"TorchScript until {loaders} to ExecuTorch or to an AOTInductor package "
                "(`migrate convert --aoti` writes one from this archive)"
            )
    return holds


PLANNING_RULES: list[PlanningRule] = [
    wrappers_wait_for_examples,
    only_what_warns_changes,
    writers_wait_for_native_readers,
    tracer_filters_stay_while_traces_do,
    loaders_move_with_their_writers,
    recorded_readers_follow,
    lite_saves_move_with_their_captures,
    captures_move_with_every_use,
    captures_wait_for_their_forward,
    branches_wait_for_scripts,
    typing_stays_while_scripted,
    questions_fold_once_nothing_stays,
    executor_switches_go_with_the_last_script,
    interfaces_go_with_every_use,
]
