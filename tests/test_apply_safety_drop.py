"""`migrate apply --intent drop --unsafe-fixes` on the safety repositories (issue 27).

The repository stops supporting TorchScript: the cases of fixtures/repos/safety that plain
`migrate apply` must not break (tests/test_apply_safety_repos.py) are migrated, not held.
Each case is copied, migrated under drop, and run before and after (its `run.py` prints its
numbers as JSON; the same numbers within assert_close's tolerance); every loader still reads
a file something writes; at least 80% of the findings are fixed, and each `torch.jit` line
left is one a re-scan reports, with the reason it stays.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.artifact_flow import unmatched_consumers
from tests.scan_support import clean_env, run_cli
from tests.test_apply_safety_repos import SAFETY, assert_same_numbers, numbers, run_programs
from tests.test_imageops_drop import jit_lines

# case -> what the drop run must have done to it (checked on the migrated text).
DROP_CASES = {
    # try: trace / except: script, both bound to `traced`: one binding, both exported.
    "a_service": {"service/export.py": ["torch.export.export(model, (example,))"] * 2},
    # `return torch.jit.script(model.eval())` in a wrapper without example inputs: it takes
    # them (a new keyword), its call passes what the loaded program is called with, and the
    # save of its result in the caller's module moves with it.
    "c_shared_path": {
        "ranking/model.py": ["example_inputs=None", "torch.export.export(model.eval(), "],
        "ranking/train.py": ["example_inputs=[torch.zeros(5, 6)]", "torch.export.save(scripted, "],
        "ranking/serve.py": ["torch.export.load(RANKER_PATH).module()"],
    },
}


def scan(tmp_path: Path, tree: Path) -> list[dict]:
    found = run_cli(
        ["scan", "--no-cache", "--intent", "drop", "-f", "json", str(tree)],
        tmp_path,
        clean_env(tmp_path),
    )
    assert found.code in (0, 1), found.stderr
    return found.json()["findings"]


@pytest.mark.verify
@pytest.mark.parametrize("case", sorted(DROP_CASES))
def test_drop_migrates_the_case_and_it_computes_the_same(case, tmp_path):
    pytest.importorskip("torch")
    before = SAFETY / case / "before"
    trees = {"original": tmp_path / "original", "drop": tmp_path / "drop"}
    for tree in trees.values():
        shutil.copytree(before, tree)
    found = scan(tmp_path, trees["drop"])
    applied = run_cli(
        ["apply", "--allow-dirty", "--intent", "drop", "--unsafe-fixes", str(trees["drop"])],
        tmp_path,
        clean_env(tmp_path),
    )
    assert applied.code in (0, 1), applied.stdout + applied.stderr

    for rel, expected in DROP_CASES[case].items():
        text = (trees["drop"] / rel).read_text(encoding="utf-8")
        for piece in set(expected):
            assert text.count(piece) == expected.count(piece), f"{rel}:\n{text}"

    runs = run_programs(tmp_path, trees)
    assert_same_numbers(numbers(runs["drop"], "migrated"), numbers(runs["original"], "original"))
    assert unmatched_consumers(trees["drop"]) == []

    left = scan(tmp_path, trees["drop"])
    assert len(found) - len(left) >= 0.8 * len(found), left
    reported = {(f["path"], f["line"]): f for f in left}
    for path in sorted(trees["drop"].rglob("*.py")):
        for line in jit_lines(path.read_text(encoding="utf-8")):
            shown = next(
                (f for (p, n), f in reported.items() if n == line and Path(p).name == path.name),
                None,
            )
            assert shown is not None, f"{path}:{line} names torch.jit and no finding says why"
            assert shown["fix"] in ("assisted", "manual"), shown
            assert "; " in shown["message"] or ": " in shown["message"], shown
