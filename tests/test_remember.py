"""The words the checks' `remember` patterns keep of a file the prefilter skips: a pattern
whose `remember_words` the text lacks is not tried, and the words must be those of every
pattern tried at every line start."""

from __future__ import annotations

import re
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from migrate.scan.checkset import CheckSet
from migrate.scan.engine import ScanOptions

ROOT = Path(__file__).resolve().parent.parent
CHECKS = CheckSet(ScanOptions().codes())


def every_pattern(text: str) -> set[str]:
    """The words of every line-start match: the patterns of import statements each on its
    own, the others in one alternation."""
    imports = [c.remember for c in CHECKS.python if c.remember and c.remember_imports]
    others = [f"(?:{c.remember})" for c in CHECKS.python if c.remember and not c.remember_imports]
    found = []
    for pattern in ["|".join(others), *imports]:
        found += re.findall("\n(?:" + pattern + ")", "\n" + text)
    return {w for m in found for w in ((m,) if isinstance(m, str) else m) if w}


def test_the_framework_patterns_are_tried_only_where_a_framework_is_named():
    assert any(c.remember_words for c in CHECKS.python)  # MIG140's lightning, MIG142's...
    text = "import lightning\nclass Model:\n    pass\ndef f():\n    pass\n"
    assert CHECKS.remembered(text) == {"lightning", "Model", "f"}
    assert CHECKS.remembered(text.replace("lightning", "numpy")) == {"Model", "f"}


def test_an_import_statement_is_remembered_by_each_pattern_that_matches_it():
    """MIG121 keeps whole `from` lines and MIG140 the Lightning module they name: one does
    not hide the other (in a single alternation the first to match took the line)."""
    assert any(c.remember_imports for c in CHECKS.python)
    text = "from pytorch_lightning import LightningModule\n"
    assert CHECKS.remembered(text) == {
        "from pytorch_lightning import LightningModule",
        "pytorch_lightning",
    }


def test_same_words_as_every_pattern_on_every_fixture_file():
    compared = 0
    for path in sorted((ROOT / "fixtures").rglob("*.py")):
        text = path.read_text(encoding="utf-8", errors="replace")
        assert CHECKS.remembered(text) == every_pattern(text), path
        compared += bool(every_pattern(text))
    assert compared > 200  # not vacuous


@given(
    st.lists(
        st.sampled_from(
            [
                "import ",
                "from ",
                "lightning",
                "pytorch_lightning",
                "ultralytics",
                "yolov5",
                "class ",
                "def ",
                "async ",
                "X",
                ".",
                "\n",
                " ",
                "\t",
            ]
        ),
        max_size=30,
    )
)
def test_same_words_as_every_pattern(pieces):
    text = "".join(pieces)
    assert CHECKS.remembered(text) == every_pattern(text)
