"""CheckSet.may_reach compares a name with the enabled checks' symbols as strings, in both
directions; it finds them by order and by prefix, and answers as comparing each does."""

from __future__ import annotations

import random

from migrate.registry import select_codes
from migrate.scan.checkset import CheckSet


def test_may_reach_answers_as_comparing_every_symbol():
    checks = CheckSet(select_codes(None, None), {})
    symbols = checks._reachable
    assert symbols  # the enabled checks have symbols: not vacuous
    rng = random.Random(11)
    names = {"", "t", "torch", "torch.jit", "numpy.random", "os.path", "foo.bar"}
    for _ in range(3000):
        symbol = rng.choice(symbols)
        grown = symbol + rng.choice(["", ".x", "y", ".jit.script"])
        names.add(grown[: rng.randint(0, len(grown))])
    reached = 0
    for name in sorted(names):
        expected = any(s.startswith(name) or name.startswith(s) for s in symbols)
        assert checks.may_reach(name) is expected, name
        reached += expected
    assert 0 < reached < len(names)  # both answers occur
