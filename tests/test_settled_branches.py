"""Branches a rewrite settled (migrate/fix/settled_branches.py, part of the tidy pass): identical
arms collapse to one, `if x: pass` goes, only where the run changed the `if` and dropping its
test changes nothing a program can observe.

The golden pairs beside this file (tests/golden/settled_branches/before -> after) are migrated
by `migrate apply --intent drop --unsafe-fixes` in one run; `MIGRATE_UPDATE=1` rewrites the
expected files (review them with git diff)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from migrate.fix.settled_branches import collapse_settled_branches
from tests.scan_support import clean_env, run_cli

GOLDEN = Path(__file__).resolve().parent / "golden" / "settled_branches"
CASES = sorted(p.name for p in (GOLDEN / "before").glob("*.py"))


@pytest.fixture(scope="module")
def migrated(tmp_path_factory) -> Path:
    work = tmp_path_factory.mktemp("settled")
    tree = work / "tree"
    shutil.copytree(GOLDEN / "before", tree)
    args = ["apply", "--allow-dirty", "--isolated", "--intent", "drop", "--unsafe-fixes", "."]
    run = run_cli(args, tree, clean_env(work))
    assert run.code in (0, 1), run.stdout + run.stderr
    return tree


@pytest.mark.parametrize("case", CASES)
def test_golden(migrated, case):
    got = (migrated / case).read_text(encoding="utf-8")
    expected = GOLDEN / "after" / case
    if os.environ.get("MIGRATE_UPDATE"):
        expected.parent.mkdir(exist_ok=True)
        expected.write_text(got, encoding="utf-8")
    assert got == expected.read_text(encoding="utf-8")


def test_golden_output_is_settled(migrated):
    """Run again on the output: the tidy pass has nothing left to collapse."""
    for case in CASES:
        text = (migrated / case).read_text(encoding="utf-8")
        before = (GOLDEN / "before" / case).read_text(encoding="utf-8")
        assert collapse_settled_branches(before, text) == text, case


IF_ELSE = "def f(a, b):\n    if {test}:\n        y = 1\n    else:\n        y = 1\n    return y\n"
ORIGINAL = (
    "def f(a, b):\n    if {test}:\n        y = g()\n    else:\n        y = h()\n    return y\n"
)
ONE_ARM = "def f(a, b):\n    y = 1\n    return y\n"


@pytest.mark.parametrize(
    "test, collapses",
    [
        ("a", True),
        ("a.b", True),
        ("a == 'x'", True),
        ("not a", True),
        ("a and b is None", True),
        ("a in (1, 2)", True),
        ("g()", False),  # a call may have effects
        ("a[0]", False),  # so may __getitem__
        ("(y := a)", False),
        ("a + b", False),
    ],
)
def test_only_a_test_without_effects_goes(test, collapses):
    fixed = IF_ELSE.format(test=test)
    out = collapse_settled_branches(ORIGINAL.format(test=test), fixed)
    assert out == (ONE_ARM if collapses else fixed)


@pytest.mark.parametrize(
    "fixed",
    [
        # A comment on the `if` or `else` line would be lost.
        "def f(a):\n    if a:  # why\n        y = 1\n    else:\n        y = 1\n    return y\n",
        "def f(a):\n    if a:\n        y = 1\n    else:  # why\n        y = 1\n    return y\n",
        # An elif chain is not two arms.
        "def f(a, b):\n    if a:\n        y = 1\n    elif b:\n        y = 1\n    else:\n"
        "        y = 1\n    return y\n",
        # Dedenting a multi-line string would change its value.
        'def f(a):\n    if a:\n        y = """x\n        z"""\n    else:\n        y = """x\n'
        '        z"""\n    return y\n',
        # Arms that differ.
        "def f(a):\n    if a:\n        y = 1\n    else:\n        y = 2\n    return y\n",
    ],
)
def test_what_stays(fixed):
    original = fixed.replace("y = 1", "y = g()", 1)
    assert collapse_settled_branches(original, fixed) == fixed


def test_pass_alone_in_a_block_becomes_the_block():
    original = "def f(a):\n    if a:\n        g()\n"
    assert collapse_settled_branches(original, "def f(a):\n    if a:\n        pass\n") == (
        "def f(a):\n    pass\n"
    )
    original = "def f(a):\n    if a:\n        g()\n    return a\n"
    fixed = "def f(a):\n    if a:\n        pass\n    return a\n"
    assert collapse_settled_branches(original, fixed) == "def f(a):\n    return a\n"


def test_an_if_the_run_did_not_change_stays():
    text = "def f(a):\n    if a:\n        pass\n    return a\n"
    assert collapse_settled_branches(text, text) == text
