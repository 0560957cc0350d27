"""The repository's own TorchScript wrappers in the plan: a call of one (MIG121) is fixed with
the wrapper's body when every finding in that body is written in the run, and an exporting
wrapper's calls wait for the example inputs it needs."""

from __future__ import annotations

import dataclasses
from collections.abc import Collection
from typing import TYPE_CHECKING

from migrate.findings import Applicability, Edit, Finding, Fix, FixKind, ImportSpec
from migrate.plan.context import (
    WRAPPER_CALLS,
    FindingKey,
    PlanningContext,
    finding_key,
    written_keys,
)

if TYPE_CHECKING:  # only named here: the facts package is imported when facts are built
    from migrate.facts import RepoFacts

_TORCHSCRIPT = ("MIG1", "MIG2")


def join_wrapper_calls(
    findings: list[Finding], allowed: Collection[Applicability], facts: RepoFacts | None = None
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
    by_file = _by_file(findings)
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
            if example is None and not call.get("result_problem"):
                joined[id(call)] = dataclasses.replace(call, message=_needs_example(call, path))
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
    by_file = _by_file(findings)
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


def _by_file(findings: list[Finding]) -> dict[str, list[Finding]]:
    by_file: dict[str, list[Finding]] = {}
    for f in findings:
        by_file.setdefault(f.path, []).append(f)
    return by_file


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


def _example(facts: RepoFacts | None, call: Finding):
    """The edit passing a wrapper call its example inputs, and the import it needs."""
    if facts is None:
        return None
    found = facts.wrapper_example(call.path, call.line, call.column, call.get("example_param"))
    if found is None:
        return None
    offset, text = found
    return (Edit(offset, offset, text),), (ImportSpec.parse("import torch"),)


_MOVES_HERE = "; the wrapper moves to torch.export in this run"


def _needs_example(call: Finding, wrapper_file: str | None) -> str:
    """A call left for a person: the wrapper exports now, and only a person can choose the
    example inputs this call must pass."""
    param = call.get("example_param")
    head = call.message.split("; it moves with the wrapper", 1)[0].split(_MOVES_HERE, 1)[0]
    return (
        f"{head}{_MOVES_HERE} ({wrapper_file}) and this call "
        f"passes no example `{param}`, and the tool cannot see what the program calls the "
        f"module with: pass `{param}=[...]` here (a person must choose the shapes); until "
        "then the call raises ValueError naming the parameter"
    )


def wrappers_wait_for_examples(ctx: PlanningContext) -> dict[FindingKey, str]:
    """A wrapper that moves to torch.export makes an ExportedProgram at each call: a call
    whose result is then used as export cannot take there (`result_problem`) holds the
    wrapper's group (its calls stay with it). So does a call that passes no example the
    facts can find, when the wrapper has an eager route (it returns what it was given: the
    hold makes it take that route, and its calls keep working); without one (it saves what
    it made), the call is reported at that call (join_wrapper_calls), where a person
    chooses the inputs, and the wrapper's guard raises until then."""
    holds: dict[FindingKey, str] = {}
    by_file = _by_file(ctx.findings)
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
        eager = any(b.get("drop_fallback") for b in body)
        if not body or not (stuck or (eager and _example(ctx.facts, call) is None)):
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


def unjoined(f: Finding) -> Finding:
    if f.autofix is None or not f.autofix.rides or f.get("fell_back"):
        return f  # an eager route taken under drop is the finding's own fix now
    data = tuple((k, v) for k, v in f.data if k != "unjoined")
    return dataclasses.replace(
        f, fix=FixKind.ASSISTED, autofix=None, message=f.get("unjoined", f.message), data=data
    )
