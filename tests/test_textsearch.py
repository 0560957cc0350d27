"""migrate.analysis.textsearch.WordSearch answers exactly what the regular expression would."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from migrate.analysis.astwalk import lines_matching
from migrate.analysis.textsearch import WholeWords, WordSearch, lines_holding
from migrate.registry import all_rules
from migrate.scan.checkset import TORCHSCRIPT_WORDS, CheckSet

CHECKS = CheckSet(sorted(all_rules()), {"cuda": "13.0"})
# Every prefilter the checks declare, and shapes that must not be taken for plain words.
PATTERNS = sorted(
    {
        *TORCHSCRIPT_WORDS,
        *(p for c in CHECKS.python for p in c.prefilter),
        *(c.prefilter for c in CHECKS.text if c.prefilter),
        *(c.prefilter_also for c in CHECKS.python if c.prefilter_also),
        # Groups: alternatives inside them are not the pattern's; a head stops at one.
        "a(?:b|c)d|x",
        "(?:x|y)z",
        "ab(?:c)*y",
        r"a\|b",
        r"\bjit\b",
        r"x\d",
        "cu1[23]",
        "ab|",
        r"12\.8",
        "torch.export",
        # Heads taken for the precheck: quantified, anchored, classes with | and ].
        "CUDA_?ARCH",
        "ab?c|x+y",
        r"\bexport\(",
        "[|]x|y",
        "[]|]a|cu1",
        r"\|a|12",
        "x{2}y",
    }
)
FRAGMENTS = [
    "jit",
    "ji",
    "t",
    "cu128",
    "cu12",
    "12.8",
    "12x8",
    "12-8",
    "a|b",
    "ab",
    "x1",
    "x",
    "sm_6",
    "CUDA_ARCH",
    "CUDAARCH",
    "CUDA",
    "ac",
    "abc",
    "xxy",
    "yy",
    "export(",
    "export ",
    "export_for_training",
    "#",
    "(",
    ")",
    "\\",
    "abd",
    "acd",
    "abcy",
    "z",
    "|x",
    "]a",
    "torch.export",
    "torchXexport",
    "onnx",
    " ",
    "\n",
    "_",
    "é",
]


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.sampled_from(PATTERNS), min_size=1, max_size=5),
    st.lists(st.sampled_from(FRAGMENTS), max_size=12),
)
def test_word_search_agrees_with_the_regex(patterns, fragments):
    text = "".join(fragments)
    expected = re.search("|".join(f"(?:{p})" for p in patterns), text) is not None
    assert WordSearch(patterns).search(text) is expected


def test_plain_words_are_searched_as_strings():
    search = WordSearch([r"torch\.export|onnx\.export", "jit", r"\bscript\b"])
    assert search.words == ("torch.export", "onnx.export", "jit")
    assert search.regex is not None and search.regex.pattern == r"(?:\bscript\b)"
    assert not search.search("torchXexport scripts")
    assert search.search("a script here")


def test_a_regex_is_tried_only_where_one_of_its_plain_heads_is():
    search = WordSearch([r"sm_[5-7]|compute_[5-7]|CUDA_?ARCH|cuda_arch"])
    assert search.heads == ("sm_", "compute_", "CUDA", "cuda_arch")
    assert search.search("CUDAARCH") and search.search("sm_6") and not search.search("sm_8")
    assert WordSearch(["(?:a|b)c"]).heads is None  # a group first: no heads, the regex decides
    # A group after plain text: the text is the head, the alternation inside is the group's.
    assert WordSearch(["ab(?:c|d)e|x+"]).heads == ("ab", "x")
    export_call = WordSearch([r"\bexport(?:_for_training)?(?:[\s\\)]|#[^\n]*)*\("])
    assert export_call.heads == ("export",)
    assert export_call.search("m = export (\n x)") and not export_call.search("reexport(x)")
    assert WordSearch(["x{2}y"]).heads is None  # a quantifier may drop the only letter


WHOLE = ["save", "load", "_save_for_lite_interpreter", "to_torchscript", "script", "a", "x.", "(a"]
PIECES = ["save", "load", "_", "x", " ", ".", "(", "\n", "é", "2", "script", "a", "ſ", "٣", "\r"]


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.sampled_from(WHOLE), min_size=1, max_size=4, unique=True),
    st.lists(st.sampled_from(PIECES), max_size=12),
)
def test_whole_words_agree_with_the_word_boundary_regex(words, pieces):
    text = "".join(pieces)
    pattern = re.compile(r"\b(?:" + "|".join(map(re.escape, words)) + r")\b")
    assert WholeWords(words).search(text) is (pattern.search(text) is not None)
    assert WholeWords(words).lines(text) == lines_matching(text, pattern)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["torch", "TORCH", "script", "Script", "ſcript", " ", "é", "K"])))
def test_a_case_blind_word_is_found_as_the_regex_finds_it(pieces):
    from migrate.checks import mig142_ultralytics_torchscript_export as mig142

    text = "".join(pieces)
    expected = re.search("torchscript", text, re.IGNORECASE) is not None
    assert mig142._spells_any_case(text) is expected


@given(st.lists(st.sampled_from(["import", "imp", "ort", "x", "\n", " ", "\r\n"]), max_size=30))
def test_lines_holding_a_word_are_the_lines_split_at_newlines_that_hold_it(pieces):
    text = "".join(pieces)
    expected = []
    start = 0
    for line in text.split("\n"):
        if "import" in line:
            expected.append((start, start + len(line)))
        start += len(line) + 1
    assert lines_holding(text, "import") == expected
