"""A cause shared by several findings of one file, said once under them in the text reports.

The members of a group (a capture, its saves, its lowering) that a person must finish all
end their messages with the same reason ("the result is returned (line 10); after the
migration it is an ExportedProgram: ..."). The text reports print each member's own part,
then the shared reason once; JSON, SARIF and GitHub output keep every message whole.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

# Where a finding's own text ends and a reason begins.
SEPARATORS = ("; ", ", but ")


@dataclass(frozen=True)
class Shared:
    """A reason said once for `members` (indexes into the messages), after the last one."""

    members: tuple[int, ...]
    cause: str


def _tails(message: str) -> list[tuple[int, str]]:
    """(where the head ends, the tail) for every separator in the message."""
    out = []
    for sep in SEPARATORS:
        start = message.find(sep)
        while start > 0:
            out.append((start, message[start + len(sep) :]))
            start = message.find(sep, start + 1)
    return out


def shared_causes(messages: list[str]) -> tuple[list[str], dict[int, Shared]]:
    """Each message's head (the message itself when it shares nothing), and the shared
    causes keyed by the index of their last member."""
    holders: dict[str, set[int]] = defaultdict(set)
    for i, message in enumerate(messages):
        for _, tail in _tails(message):
            holders[tail].add(i)
    chosen: dict[int, tuple[int, str]] = {}
    for i, message in enumerate(messages):
        shared = [(cut, tail) for cut, tail in _tails(message) if len(holders[tail]) > 1]
        if shared:  # the longest reason this message shares with another
            chosen[i] = max(shared, key=lambda ct: len(ct[1]))
    groups: dict[str, list[int]] = defaultdict(list)
    for i, (_, tail) in chosen.items():
        groups[tail].append(i)
    heads = list(messages)
    causes: dict[int, Shared] = {}
    for tail, members in groups.items():
        if len(members) < 2:
            continue
        for i in members:
            heads[i] = messages[i][: chosen[i][0]]
        causes[max(members)] = Shared(tuple(sorted(members)), tail)
    return heads, causes


def cause_line(shared: Shared, where: list[str], cause: str | None = None) -> str:
    """`└ the 4 findings above: <cause>`, or `└ 6:14, 9:5: <cause>` (the members'
    line:column) when others come between them; printed under the last member."""
    first, last = shared.members[0], shared.members[-1]
    if last - first + 1 == len(shared.members):
        who = f"the {len(shared.members)} findings above"
    else:
        who = ", ".join(where[i] for i in shared.members)
    return f"└ {who}: {shared.cause if cause is None else cause}"
