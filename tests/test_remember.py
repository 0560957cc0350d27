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
    patterns = [f"(?:{c.remember})" for c in CHECKS.python if c.remember]
    found = re.findall("\n(?:" + "|".join(patterns) + ")", "\n" + text)
    return {w for m in found for w in ((m,) if isinstance(m, str) else m) if w}


def test_the_framework_patterns_are_tried_only_where_a_framework_is_named():
    assert any(c.remember_words for c in CHECKS.python)  # MIG140's lightning, MIG142's...
    text = "import lightning\nclass Model:\n    pass\ndef f():\n    pass\n"
    assert CHECKS.remembered(text) == {"lightning", "Model", "f"}
    assert CHECKS.remembered(text.replace("lightning", "numpy")) == {"Model", "f"}


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
