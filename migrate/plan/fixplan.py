"""Decide, for the whole repository at once, which fixes keep the program working.

Checks see one file; a fix's safety can depend on others: a loader rewritten to read a
`.pt2` needs every writer of that file rewritten in the same run, a filter for tracer
warnings is dead only when no trace stays. The planner runs after the scan, asks the
repository facts (`migrate.facts`) and the fixes other findings will really write, and
holds back what would leave the tree inconsistent: a held finding becomes assisted, its
message saying why. Holding one fix can hold others (its group, a loader of its file), so
it repeats until nothing changes.

The migration intent (`--intent`, `[tool.migrate] intent`) is decided here, once for the
tree: under `drop` a construct that the scripting compiler or the tracer reads goes as soon
as nothing that stays scripts or traces it (a script rewritten in this same run blocks
nothing); under `keep-scriptable` only what warns in the pinned torch changes
(`WARNING_RULES`); without one, each site as before.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field

from migrate.findings import Applicability, Edit, Finding, Fix, FixKind, ImportSpec
from migrate.plan.units import fix_units
from migrate.registry import all_rules, codes_with, intent_sensitive_codes, warning_codes

FindingKey = tuple[str, str]  # (path, RULE@line:column)

# What the planning rules ask about, by the role each rule's data declares (rules/*.yaml,
# registry.ROLES): a new rule joins by saying its role there, not by being listed here.
TRACE_RULES = codes_with("trace")  # a trace that goes: MIG118 asks whether any stays
CAPTURE_RULES = codes_with("capture")
SCRIPT_RULES = codes_with("script")
PRODUCER_RULES = codes_with("producer")
CONSUMER_RULES = codes_with("consumer")
# Fixes that remove what the scripting compiler reads (decorators, type hints): right only
# once nothing scripts that code.
TYPING_RULES = codes_with("typing")
WRAPPER_CALLS = codes_with("wrapper-call")
# The rules whose constructs warn at import or call time in torch 2.13 (`python
# benchmarks/jit_warnings.py` runs each API; `warns_in` in their data): the only ones
# `keep-scriptable` changes. With them go what must move together: a TracerWarning filter
# with its traces, a lite loader (silent itself) with the `_save_for_lite_interpreter` that
# writes its file, optimize_for_mobile with its capture and lite save.
WARNING_RULES = warning_codes()
INTENTS = ("drop", "keep-scriptable")
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


def needs_facts(findings: Iterable[Finding]) -> bool:
    """Whether any fix here depends on other files (else the planner needs no facts)."""
    cross_file = codes_with("cross-file")
    # A MIG110 fold is the planner's to decide only under an intent (it says so).
    return any(
        f.autofix is not None and (f.rule in cross_file or f.get("planned")) for f in findings
    )


def finding_key(f: Finding) -> FindingKey:
    return (f.path, f.key)


@dataclass
class FixPlan:
    """The findings as the run will treat them, and why each held one is held."""

    findings: list[Finding]
    held: dict[FindingKey, str] = field(default_factory=dict)


@dataclass
class PlanningContext:
    """What a planning rule may ask: the current findings, which fixes will be written."""

    findings: list[Finding]
    written: set[FindingKey]
    selected: frozenset[str]
    facts: object | None
    intent: str | None = None

    def by_path(self, path: str) -> list[Finding]:
        return [f for f in self.findings if f.path == path]


PlanningRule = Callable[[PlanningContext], dict[FindingKey, str]]


def written_keys(findings: Iterable[Finding], allowed: Collection[Applicability]) -> set:
    units, _ = fix_units(findings, allowed)
    return {finding_key(f) for u in units for f in u.findings}


def demote(f: Finding, reason: str) -> Finding:
    """An auto finding the run will not write: assisted, its message the rule's head (what is
    wrong) and why the rewrite is held, instead of what the rewrite would have done."""
    head = f.message.split("; ", 1)[0]
    return dataclasses.replace(
        f, fix=FixKind.ASSISTED, autofix=None, message=f"{head}; not rewritten: {reason}"
    )


def plan_fixes(
    findings: list[Finding],
    allowed: Collection[Applicability],
    selected: Iterable[str],
    facts: object | None = None,
    rules: Iterable[PlanningRule] | None = None,
    intent: str | None = None,
    held: dict[FindingKey, str] | None = None,
) -> FixPlan:
    """`held`: fixes held from the start, with their reason (the ones `apply --test` saw
    break the tests: held_with_reverted); what depends on them is held as in any round."""
    rules = list(rules if rules is not None else PLANNING_RULES)
    # A wrapper call joined to its wrapper's fix by an earlier plan (the scan's, for every
    # fix) is judged again for this run's fixes.
    plan = FixPlan([_unjoined(f) for f in findings], dict(held or {}))
    plan.findings = [
        demote(f, plan.held[finding_key(f)])
        if finding_key(f) in plan.held and f.autofix is not None
        else f
        for f in plan.findings
    ]
    for _ in range(20):
        # Wrapper calls joined to what this round writes: a call that moves with its
        # wrapper is a writer or reader that moves (loaders_move_with_their_writers).
        current = join_wrapper_calls(plan.findings, allowed, facts)
        ctx = PlanningContext(
            current,
            written_keys(current, allowed),
            frozenset(selected),
            facts,
            intent,
        )
        holds: dict[FindingKey, str] = {}
        for rule in rules:
            for key, reason in rule(ctx).items():
                if key in ctx.written or _auto(plan.findings, key):
                    holds.setdefault(key, reason)
        holds = {k: r for k, r in holds.items() if k not in plan.held}
        swapped = False
        if intent == "drop":
            plan.findings, holds, swapped = _fall_back(plan.findings, holds)
        if not holds:
            if swapped:
                continue  # the eager routes taken are judged in the next round
            break
        plan.held.update(holds)
        plan.findings = [
            demote(f, holds[finding_key(f)]) if finding_key(f) in holds else f
            for f in plan.findings
        ]
    plan.findings = _demote_broken_groups(plan, allowed)
    plan.findings = join_wrapper_calls(plan.findings, allowed, facts)
    return plan


def _fall_back(
    findings: list[Finding], holds: dict[FindingKey, str]
) -> tuple[list[Finding], dict[FindingKey, str], bool]:
    """Under drop, a held export whose capture has an eager route (`drop_fallback`) takes
    it instead of being held, with every member of its group that has one: the capture
    becomes the object it captured. The holds left, and whether anything changed."""
    groups = {
        (f.path, f.autofix.group)
        for f in findings
        if finding_key(f) in holds
        and f.get("drop_fallback")
        and f.autofix is not None
        and f.autofix.group
    }
    out: list[Finding] = []
    swapped = False
    for f in findings:
        fallback = f.get("drop_fallback")
        in_group = f.autofix is not None and (f.path, f.autofix.group) in groups
        if fallback is None or not (finding_key(f) in holds or in_group):
            out.append(f)
            continue
        message, fix = fallback
        reason = holds.pop(finding_key(f), None) or "its group's export is held"
        head = f.message.split("; ", 1)[0]
        data = tuple((k, v) for k, v in f.data if k not in ("drop_fallback", "route"))
        out.append(
            dataclasses.replace(
                f,
                fix=FixKind.AUTO,
                autofix=fix,
                message=f"{head}; {message} (its export is held: {reason})",
                data=(*data, ("route", "eager"), ("fell_back", True)),
            )
        )
        swapped = True
    return out, holds, swapped


def held_with_reverted(
    findings: list[Finding],
    allowed: Collection[Applicability],
    selected: Iterable[str],
    facts: object | None,
    intent: str | None,
    units: list,
    reverted: dict[int, str],
) -> dict[int, str]:
    """`apply --test` reverted `units[i]` for each `i` in `reverted` (its reason): the other
    units whose plan assumed one of those migrates in this run (a load of what a reverted
    save writes, an `is_scripting()` fold allowed because every script goes, a wrapper's
    calls), each with the planner's reason. The same plan as the run's, those units held
    from the start: nothing here decides what depends on what."""
    held = {finding_key(f): why for i, why in reverted.items() for f in units[i].findings}
    plan = plan_fixes(findings, allowed, selected, facts, intent=intent, held=held)
    written = written_keys(plan.findings, allowed)
    out: dict[int, str] = {}
    for i, unit in enumerate(units):
        lost = [finding_key(f) for f in unit.findings if finding_key(f) not in written]
        if i in reverted or not lost:
            continue
        reasons = [plan.held[k] for k in lost if k in plan.held]
        # The one real reason: a rule's, before a group member's "its group also needs".
        own = [r for r in reasons if not r.startswith("its group also needs")]
        out[i] = (own or reasons or ["it moves with a fix that is now held"])[0]
    return out


def _auto(findings: list[Finding], key: FindingKey) -> bool:
    return any(finding_key(f) == key and f.autofix is not None for f in findings)


def _demote_broken_groups(plan: FixPlan, allowed: Collection[Applicability]) -> list[Finding]:
    """Members of a group that lost a member are held too, saying which member."""
    _, held = fix_units(plan.findings, allowed)
    group_holds = {
        finding_key(h.finding): h.reason
        for h in held
        if h.finding.autofix is not None
        and h.finding.autofix.group is not None
        and "its group also needs" in h.reason
    }
    plan.held.update(group_holds)
    return [
        demote(f, group_holds[finding_key(f)]) if finding_key(f) in group_holds else f
        for f in plan.findings
    ]


_TORCHSCRIPT = ("MIG1", "MIG2")


def join_wrapper_calls(
    findings: list[Finding], allowed: Collection[Applicability], facts: object | None = None
) -> list[Finding]:
    """MIG121: a call of the repository's own wrapper is fixed with the wrapper's body, in
    the wrapper's file. When every TorchScript finding in that body is written in this run,
    the call becomes auto (safe, or unsafe when one of them is), riding on them (plan.units:
    written, counted and reverted with them); else it stays assisted, naming the wrapper
    (its own message). A call that must now pass example inputs (`example_param`: the
    wrapper moves to torch.export) gets them written in (the facts' `wrapper_example`, the
    arguments the program calls the module with); one the facts find none for stays, and
    holds its wrapper (wrappers_wait_for_examples). A wrapper that only calls wrappers of
    its file (`derived`) has no body findings of its own: its calls ride on those calls'."""
    findings = _wrappers_fixed_with_their_bodies(findings, allowed)
    calls = [
        f
        for f in findings
        if f.rule in WRAPPER_CALLS and f.get("role") not in (None, "wrapper") and f.get("body")
    ]
    if not calls:
        return findings
    written = written_keys(findings, allowed)
    by_file: dict[str, list[Finding]] = {}
    for f in findings:
        by_file.setdefault(f.path, []).append(f)
    joined: dict[int, Finding] = {}
    for call in calls:
        path = call.get("wrapper_file")
        body = _wrapper_body(by_file, call)
        if not body or any(finding_key(b) not in written for b in body):
            continue
        edits: tuple = ()
        imports: tuple = ()
        eager = any(b.get("route") == "eager" for b in body)  # the wrapper returns its input
        if call.get("example_param") and not eager:
            example = _example(facts, call)
            if example is None or call.get("result_problem"):
                continue
            edits, imports = example
        # A rider in the body (a wrapper fixed with its own body) is written with what it
        # rides on: ride on that.
        rides = tuple(
            dict.fromkeys(
                key
                for b in body
                for key in (b.autofix.rides if b.autofix and b.autofix.rides else [finding_key(b)])
            )
        )
        for save in _result_saves(by_file, call):  # the program it makes, saved here
            key, save_edits, save_imports = save
            f = next(s for s in by_file[call.path] if s.key == key)
            joined[id(f)] = dataclasses.replace(
                f,
                fix=FixKind.AUTO,
                message=f"{f.message.split('; ', 1)[0]}; saves the program the wrapper call on "
                f"line {call.line} now makes with `torch.export.save`, with the wrapper",
                data=(*f.data, ("unjoined", f.message)),
                autofix=Fix(save_edits, save_imports, Applicability.UNSAFE, rides=rides),
            )
        unsafe = any(b.applicability is Applicability.UNSAFE for b in body)
        head = call.message.split("; it moves with the wrapper", 1)[0]
        rules = ", ".join(f"{b.rule} at line {b.line}" for b in body[:3])
        more = f" and {len(body) - 3} more" if len(body) > 3 else ""
        how = (
            f"it passes the example `{call.get('example_param')}={edits[0].text.split('=', 1)[1]}`"
            " (what the program calls the module with) and is fixed with the wrapper"
            if edits
            else "it needs no edit: it is fixed with the wrapper"
        )
        joined[id(call)] = dataclasses.replace(
            call,
            fix=FixKind.AUTO,
            message=f"{head}; {how}, whose body is rewritten in this run ({rules}{more} in {path})",
            data=(*call.data, ("unjoined", call.message)),
            autofix=Fix(
                edits,
                imports,
                Applicability.UNSAFE if unsafe or edits else Applicability.SAFE,
                rides=rides,
            ),
        )
    return [joined.get(id(f), f) for f in findings]


def _wrappers_fixed_with_their_bodies(
    findings: list[Finding], allowed: Collection[Applicability]
) -> list[Finding]:
    """Under drop, a wrapper the group rewrite could not move (it traces, say) whose body's
    TorchScript findings are each written on their own is migrated by them: its finding
    rides on theirs (no edit of its own), so that its calls can join it."""
    wrappers = [
        f
        for f in findings
        if f.rule in WRAPPER_CALLS
        and f.get("role") == "wrapper"
        and f.get("body")
        and f.autofix is None
        and f.get("drop")
    ]
    if not wrappers:
        return findings
    written = written_keys(findings, allowed)
    by_file: dict[str, list[Finding]] = {}
    for f in findings:
        by_file.setdefault(f.path, []).append(f)
    joined: dict[int, Finding] = {}
    for w in wrappers:
        body = [b for b in _wrapper_body(by_file, w) if b is not w]
        if not body or any(finding_key(b) not in written for b in body):
            continue
        head = w.message.split(". ", 1)[0]
        joined[id(w)] = dataclasses.replace(
            w,
            fix=FixKind.AUTO,
            message=f"{head}. Its body's findings are each rewritten in this run, and it moves "
            "with them",
            data=(*w.data, ("unjoined", w.message)),
            autofix=Fix(
                (),
                (),
                Applicability.UNSAFE
                if any(b.applicability is Applicability.UNSAFE for b in body)
                else Applicability.SAFE,
                rides=tuple(finding_key(b) for b in body),
            ),
        )
    return [joined.get(id(f), f) for f in findings]


def _result_saves(by_file: dict[str, list[Finding]], call: Finding) -> list:
    """The saves of what a capture call makes (`result_saves`: key, edits, imports) whose
    findings are there, still unwritten (assisted: the save saw no program)."""
    here = {f.key: f for f in by_file.get(call.path, ())}
    return [
        s for s in call.get("result_saves") or () if s[0] in here and here[s[0]].autofix is None
    ]


def _wrapper_body(by_file: dict[str, list[Finding]], call: Finding, depth: int = 0) -> list:
    """The TorchScript findings a wrapper call is fixed with: those in its wrapper's body,
    and, for the calls of other wrappers there (a wrapper calling a wrapper), theirs."""
    path = call.get("wrapper_file")
    start, _, end = str(call.get("body")).partition("-")
    body: list[Finding] = []
    for b in by_file.get(path, ()):
        if not int(start) <= b.line <= int(end) or b.rule[:4] not in _TORCHSCRIPT:
            continue
        if b.rule not in WRAPPER_CALLS or b.get("role") == "wrapper":
            body.append(b)
        elif b.get("body") and depth < 4 and b.get("body") != call.get("body"):
            inner = _wrapper_body(by_file, b, depth + 1)
            if not inner:
                return []
            body += [i for i in inner if i not in body]
    return body


def _example(facts: object | None, call: Finding):
    """The edit passing a wrapper call its example inputs, and the import it needs."""
    if facts is None:
        return None
    found = facts.wrapper_example(call.path, call.line, call.column, call.get("example_param"))  # type: ignore[attr-defined]
    if found is None:
        return None
    offset, text = found
    return (Edit(offset, offset, text),), (ImportSpec.parse("import torch"),)


def wrappers_wait_for_examples(ctx: PlanningContext) -> dict[FindingKey, str]:
    """A wrapper that moves to torch.export needs example inputs from every call in the
    repository: one that passes none, where the facts cannot tell what the program calls
    the module with, holds the wrapper's group (its calls stay with it)."""
    holds: dict[FindingKey, str] = {}
    by_file: dict[str, list[Finding]] = {}
    for f in ctx.findings:
        by_file.setdefault(f.path, []).append(f)
    for call in ctx.findings:
        if (
            call.rule not in WRAPPER_CALLS
            or not call.get("example_param")
            or call.autofix is not None
        ):
            continue
        # The wrapper's export group waits; a fix of its own (an annotation) does not.
        body = [
            b for b in _wrapper_body(by_file, call) if b.autofix is not None and b.autofix.group
        ]
        stuck = call.get("result_problem")
        if not body or (_example(ctx.facts, call) is not None and not stuck):
            continue
        reason = (
            f"its call at {call.path}:{call.line} passes no example "
            f"`{call.get('example_param')}` and the tool cannot see what the program calls "
            f"the module with: pass `{call.get('example_param')}=[...]` there (a person must "
            "choose the shapes)"
        )
        if stuck:
            reason = (
                f"what its call at {call.path}:{call.line} makes would be an ExportedProgram, "
                f"and there {stuck}"
            )
        for b in body:
            holds.setdefault(finding_key(b), reason)
    return holds


def _unjoined(f: Finding) -> Finding:
    if f.autofix is None or not f.autofix.rides or f.get("fell_back"):
        return f  # an eager route taken under drop is the finding's own fix now
    data = tuple((k, v) for k, v in f.data if k != "unjoined")
    return dataclasses.replace(
        f, fix=FixKind.ASSISTED, autofix=None, message=f.get("unjoined", f.message), data=data
    )


# Checks whose findings differ with the intent (the planner decides the rest); the capture
# rewrites' (MIG101-MIG103, MIG201-MIG204) with it: under `drop` a capture bound on two paths
# (`try: trace ... except: script`) is one binding (migrate.checks.export.alternatives).
INTENT_CHECKS = intent_sensitive_codes()


def intent_unlocks(scanner, findings: list[Finding]) -> dict[str, int]:
    """Without an intent: how many fixes (safe + unsafe) each intent would write, against
    the `findings` planned per site. Planned again under each intent, from the same scan and
    facts; only the files of INTENT_CHECKS' findings are analysed again (their trees are the
    scan's: migrate.analysis.parsed)."""
    from migrate.plan.units import WITH_UNSAFE

    if not _torchscript(findings):
        return {}
    out = {}
    for intent in INTENTS:
        raw = scanner.findings_under(intent, INTENT_CHECKS)
        facts = scanner.facts(force=needs_facts(raw))
        plan = plan_fixes(raw, WITH_UNSAFE, scanner.codes, facts, intent=intent)
        out[intent] = len(written_keys(plan.findings, WITH_UNSAFE))
    return out


def attach_unlocks(scanner, result) -> None:
    """Without an intent and with TorchScript findings, `result.unlocks` for the reports:
    with `--compare-intents` (`ScanOptions.compare_intents`), the fixes written per site
    ("none") and under each intent; without it {} (the reports name the option). Comparing
    analyses the files of INTENT_CHECKS' findings twice more and plans twice more, about
    what a scan with an intent costs again for those files: asked for, not paid by every
    scan."""
    from migrate.plan.units import WITH_UNSAFE

    if scanner.options.intent is not None or not _torchscript(result.findings):
        return
    if not scanner.options.compare_intents:
        result.unlocks = {}
        return
    counts = intent_unlocks(scanner, result.findings)
    result.unlocks = {"none": len(written_keys(result.findings, WITH_UNSAFE)), **counts}


def _torchscript(findings: list[Finding]) -> bool:
    """Findings an intent decides (capture and serialization rules)."""
    return any(f.rule[:4] in ("MIG1", "MIG2") for f in findings)


# --------------------------------------------------------------------------- rules


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
            if facts.site_at(f.path, f.line, f.column) is None:  # type: ignore[attr-defined]
                holds[finding_key(f)] = (
                    "the tool cannot follow which file this load reads, nor what writes it"
                )
    for site in facts.sites:  # type: ignore[attr-defined]
        rules = CONSUMER_RULES if site.role == "consumer" else PRODUCER_RULES
        mine = [f for f in _at(ctx, rules, *site.span.start) if f.autofix is not None]
        # A wrapper's own save or load (its path a parameter) moves with the wrapper: the
        # files are its calls' (MIG121), each a site of its own.
        mine = [f for f in mine if not f.get("wrapper_body")]
        if not mine or not any(finding_key(f) in ctx.written for f in mine):
            continue
        reason = None
        if site.role == "consumer":
            producers = facts.producers_of(site)  # type: ignore[attr-defined]
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
            consumers = facts.consumers_of(site)  # type: ignore[attr-defined]
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
        uses = facts.external_uses(f.path, f.line, f.column)  # type: ignore[attr-defined]
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
        captured = facts.class_of_capture(f.path, f.line, f.column)  # type: ignore[attr-defined]
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
    for capture in facts.captures:  # type: ignore[attr-defined]
        start = capture.call.start
        rules = _capture_rules_of(capture.api)
        if not rules or not _stays(ctx, _at(ctx, rules, *start)):
            continue
        captured = facts.class_of_capture(*start)  # type: ignore[attr-defined]
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
                and ctx.facts.capture_at(f.path, f.line, f.column) is None  # type: ignore[attr-defined]
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
        reach = facts.reached(switch.path, paths) if facts is not None else paths  # type: ignore[attr-defined]
        near = [
            f
            for f in staying
            if f.path in reach or (facts is not None and facts.reached(f.path, {switch.path}))  # type: ignore[attr-defined]
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
    for capture in facts.captures:  # type: ignore[attr-defined]
        if capture.api not in apis:
            continue
        # A finding keeps the first reason it is given: only the others can change.
        typed = [f for f in typed if finding_key(f) not in holds]
        if not typed:
            break
        start = capture.call.start
        if not _stays(ctx, _at(ctx, rules, *start)):
            continue
        captured = facts.class_of_capture(*start)  # type: ignore[attr-defined]
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
            reach = facts.reached(captured.display, paths)  # type: ignore[attr-defined]
            why = (
                f"`{captured.class_name}` is still {verb} at {_where(capture.call)}, and the "
                f"{'scripting compiler' if api == 'script' else 'tracer'} reads this"
            )
        for f in typed:
            if reach is None or (
                f.path in reach
                and (captured is None or facts.compiled_with(captured, f.path, f.line))  # type: ignore[attr-defined]
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
    repo = getattr(ctx.facts, "repo", None)
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
