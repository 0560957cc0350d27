"""benchmarks/dev_corpus.py: its pure helpers (no corpus, no torch).

Reasons from different sites group into one cause; the table lines up; a tree that is not the
corpus commit is refused with one line.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import dev_corpus  # noqa: E402

HELD_A = (
    "`torch.jit.trace` freezes control flow and is deprecated; the result is used in a way "
    "the tool does not follow (line 155); under intent drop it stays: the test compares it "
    "with `model` itself: as the eager object the comparison would check nothing"
)
HELD_B = HELD_A.replace("line 155", "line 9").replace("`model`", "`net`")


def test_reasons_from_two_sites_group_into_one_cause():
    a, b = (dev_corpus.normalise_reason(m) for m in (HELD_A, HELD_B))
    assert (
        a
        == b
        == (
            "the test compares it with `…` itself: as the eager object the comparison would "
            "check nothing"
        )
    )
    findings = [
        {"rule": "MIG102", "message": HELD_A},
        {"rule": "MIG102", "message": HELD_B},
        {"rule": "MIG101", "message": "cannot tell what it compiles"},
    ]
    assert dev_corpus.group_causes(findings) == [
        (2, "MIG102", a),
        (1, "MIG101", "cannot tell what it compiles"),
    ]


def test_paths_numbers_and_site_names_are_replaced_torch_apis_kept():
    message = (
        "`f` is a wrapper. Not rewritten: the `torch.jit.script` at tools/bench.py:265 stays "
        "and `self.model` is held by 3 sites in nequip/nn/_graph.py"
    )
    assert dev_corpus.normalise_reason(message) == (
        "the `torch.jit.script` at PATH stays and `…` is held by N sites in PATH"
    )
    # The last marker wins: the reason is what follows it.
    assert dev_corpus.normalise_reason("a; not rewritten: b; under intent drop it stays: c") == "c"


def test_jit_lines_counted_as_the_issue_counts_them():
    text = (
        "import torch\n"
        "m = torch.jit.script(m)  # one\n"
        "if not torch.jit.is_scripting():  # one line, two matches\n"
        "    pass\n"
        "if is_scripting(): pass\n"
        "torch.jit  # no trailing dot: not counted\n"
    )
    assert dev_corpus.count_jit_lines(text) == 3


def test_cells_and_table():
    assert dev_corpus.pair(dev_corpus._ABSENT, 5) == "5"
    assert dev_corpus.pair(3, 5) == "3 -> 5"
    assert dev_corpus.pair(None, 5) == "- -> 5"
    assert dev_corpus.share(6, 8) == "75%"
    assert dev_corpus.share(None, 8) == dev_corpus.share(1, 0) == "-"
    assert dev_corpus.table(["repo", "n"], [["asteroid", "8"], ["all", "320"]]).splitlines() == [
        "| repo     | n   |",
        "| -------- | --- |",
        "| asteroid | 8   |",
        "| all      | 320 |",
    ]


def test_module_names():
    assert dev_corpus.module_name("fairseq/models/lstm.py") == "fairseq.models.lstm"
    assert dev_corpus.module_name("torchani/nn/__init__.py") == "torchani.nn"
    assert dev_corpus.module_name("README.md") is None


def _git(tree: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.email=t@t", "-c", "user.name=t", *args],
        cwd=tree,
        check=True,
        capture_output=True,
    )


def test_a_tree_not_at_the_corpus_commit_is_refused(tmp_path):
    repo = dev_corpus.CORPUS["asteroid"]
    tree = tmp_path / "asteroid"
    tree.mkdir()
    assert "not a git work tree" in dev_corpus.commit_problem("asteroid", tree)
    (tree / "a.py").write_text("x = 1\n")
    _git(tree, "init", "-q")
    _git(tree, "add", "a.py")
    _git(tree, "commit", "-qm", "something else")
    problem = dev_corpus.commit_problem("asteroid", tree)
    assert problem.startswith(f"{tree}: HEAD is ") and repo.commit[:12] in problem
    # corpus-tree.sh's layout commit names the upstream commit: accepted while clean.
    _git(tree, "commit", "-q", "--allow-empty", "-m", f"{repo.slug} at {repo.commit}")
    assert dev_corpus.commit_problem("asteroid", tree) is None
    (tree / "a.py").write_text("x = 2\n")
    assert "has changes" in dev_corpus.commit_problem("asteroid", tree)
