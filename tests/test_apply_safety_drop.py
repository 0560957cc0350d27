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


BRANCHES = """\
import torch


def export(flag):
    model = torch.nn.Linear(4, 2)
    x = torch.randn(2, 4)
    if flag:
        m = torch.jit.trace(model, x)
    else:
        m = torch.jit.script({scripted})
    torch.jit.save(m, "m.pt")
"""


def _capture_findings(tmp_path: Path, scripted: str, *intent: str) -> dict[str, dict]:
    root = tmp_path / "pkg"
    root.mkdir(exist_ok=True)
    (root / "export.py").write_text(BRANCHES.format(scripted=scripted), encoding="utf-8")
    found = run_cli(
        ["scan", "--no-cache", *intent, "-f", "json", str(root)], tmp_path, clean_env(tmp_path)
    )
    assert found.code in (0, 1), found.stderr
    return {f["rule"]: f for f in found.json()["findings"]}


def test_an_if_else_binding_one_name_to_two_captures_is_one_binding_under_drop(tmp_path):
    drop = _capture_findings(tmp_path, "model", "--intent", "drop")
    assert [drop[r]["fix"] for r in ("MIG101", "MIG102", "MIG201")] == ["auto"] * 3, drop
    assert "the captures on lines 8, 10 bind `m` on each path" in drop["MIG101"]["message"]
    # Without an intent the scripted fallback stays TorchScript, and so does the group.
    plain = _capture_findings(tmp_path, "model")
    assert [plain[r]["fix"] for r in ("MIG101", "MIG102", "MIG201")] == ["assisted"] * 3
    assert "rebound on another path" in plain["MIG102"]["message"]


def test_a_scripted_fallback_of_another_module_holds_the_group_and_says_why(tmp_path):
    drop = _capture_findings(tmp_path, "model.float()", "--intent", "drop")
    assert [drop[r]["fix"] for r in ("MIG101", "MIG102", "MIG201")] == ["assisted"] * 3, drop
    assert (
        "the fallback on line 10 scripts `model.float()`, and no traced branch of that module "
        "has example inputs in scope there"
    ) in drop["MIG102"]["message"]
