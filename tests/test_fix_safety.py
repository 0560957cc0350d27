"""Issue 10: a fix is a value with a promise (safe / unsafe / display) and a group is written
whole or not at all."""

from __future__ import annotations

import json
from pathlib import Path

from migrate.findings import Applicability, Edit, Finding, Fix, FixKind
from migrate.pipeline.apply import run_apply
from migrate.plan.units import WITH_UNSAFE, WRITABLE, fix_units
from migrate.scan.engine import ScanOptions
from tests.scan_support import run_cli

GROUP = """\
import torch


def export(model, x):
    traced = torch.jit.trace(model, x)
    torch.jit.save(traced, "model.pt")
"""

CALLED_AS_TRACED = """\
import torch


def run(model, x):
    traced = torch.jit.trace(model, x)
    return traced(x)
"""

CALLED_OTHERWISE = """\
import torch


def run(model, x, batches):
    traced = torch.jit.trace(model, x)
    return [traced(b) for b in batches]
"""

SAFE_ONLY = """\
import torch


def f(x):
    return torch.jit.annotate(int, x) + 1
"""


def _apply(tmp_path: Path, text: str, **kw) -> tuple[str, object]:
    path = tmp_path / "m.py"
    path.write_text(text, encoding="utf-8")
    select = kw.pop("select", None)
    options = ScanOptions(use_git=False, cache=False, select=select)
    result = run_apply([str(path)], options, allow_dirty=True, **kw)
    return path.read_text(encoding="utf-8"), result


def test_unsafe_fix_is_written_only_with_unsafe_fixes(tmp_path):
    text, result = _apply(tmp_path, GROUP)
    assert text == GROUP
    reasons = {h.finding.rule: h.reason for h in result.held}
    assert "pass --unsafe-fixes" in reasons["MIG102"]
    text, _ = _apply(tmp_path, GROUP, unsafe_fixes=True)
    assert "traced = torch.export.export(" in text
    assert 'torch.export.save(traced, "model.pt2")' in text


def test_safe_fix_is_written_by_default(tmp_path):
    text, result = _apply(tmp_path, SAFE_ONLY)
    assert "torch.jit" not in text and "return x + 1" in text
    assert not result.held


def test_a_capture_only_called_becomes_the_eager_module_by_default(tmp_path):
    # Issue 27: calls of the module itself behave as the traced ones did (its Python runs
    # where the trace had frozen one path), so the eager route is safe; export stays unsafe
    # (test_unsafe_fix_is_written_only_with_unsafe_fixes).
    for source in (CALLED_AS_TRACED, CALLED_OTHERWISE):
        text, result = _apply(tmp_path, source)
        assert "traced = model\n" in text and "torch.jit" not in text, text
        assert not result.held


SCRIPTED_ELSEWHERE = {
    "pkg/__init__.py": "",
    "pkg/layers.py": (
        "import torch\n\n\nclass Scale(torch.nn.Module):\n"
        "    def forward(self, x):\n        return x * scale(x.size(0))\n\n\n"
        "def scale(n: int) -> int:\n    return torch.jit.annotate(int, n) + 1\n"
    ),
    "pkg/export.py": (
        "import torch\n\nfrom pkg.layers import Scale\n\n\n"
        "def export(path):\n    torch.jit.save(torch.jit.script(Scale()), path)\n"
    ),
}


def test_typing_fixes_wait_while_their_code_is_still_scripted(tmp_path):
    for name, text in SCRIPTED_ELSEWHERE.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    options = ScanOptions(use_git=False, cache=False)
    result = run_apply([str(tmp_path)], options, allow_dirty=True)
    layers = (tmp_path / "pkg/layers.py").read_text()
    assert "torch.jit.annotate(int, n)" in layers  # the script stays: so does its type hint
    (annotate,) = [f for f in result.scan.findings if f.rule == "MIG111"]
    assert annotate.fix is FixKind.ASSISTED
    assert "pkg/export.py:7, and the scripting compiler reads this" in annotate.message
    assert "`Scale` is still scripted at " in annotate.message
    # Once the script goes (here: the user removed it), the hint goes too.
    (tmp_path / "pkg/export.py").write_text("def export(path):\n    pass\n")
    run_apply([str(tmp_path)], options, allow_dirty=True)
    assert "return n + 1" in (tmp_path / "pkg/layers.py").read_text()


def test_select_of_one_group_member_writes_nothing_of_the_group(tmp_path):
    for select in (["MIG201"], ["MIG102"]):
        text, result = _apply(tmp_path, GROUP, unsafe_fixes=True, select=select)
        assert text == GROUP, select
        # The scan says so: the selected member is assisted, naming the one it waits for.
        (finding,) = result.scan.findings
        assert finding.fix is FixKind.ASSISTED and finding.autofix is None
        other = "MIG102" if select == ["MIG201"] else "MIG201"
        assert f"its group also needs {other}" in finding.message
        assert "not selected or is suppressed" in finding.message


def test_suppressed_group_member_holds_the_whole_group(tmp_path):
    suppressed = GROUP.replace(
        "traced = torch.jit.trace(model, x)",
        "traced = torch.jit.trace(model, x)  # migrate: ignore[MIG102]",
    )
    text, result = _apply(tmp_path, suppressed, unsafe_fixes=True)
    assert text == suppressed
    # The save is assisted, naming the member that holds it.
    (finding,) = result.scan.findings
    assert finding.fix is FixKind.ASSISTED and "MIG102" in finding.message


def test_display_fixes_are_never_written():
    display = Finding(
        "m.py", 1, 1, 1, 2, "MIG111", "s", "m", FixKind.AUTO,
        autofix=Fix((Edit(0, 1, "y"),), applicability=Applicability.DISPLAY),
    )  # fmt: skip
    units, held = fix_units([display], WITH_UNSAFE)
    assert not units and "never written" in held[0].reason
    units, held = fix_units([display], WRITABLE)
    assert not units and held


def test_config_unsafe_fixes_and_flag_override(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.migrate]\nunsafe-fixes = true\n")
    path = tmp_path / "m.py"
    path.write_text(GROUP, encoding="utf-8")
    proc = run_cli(["apply", "--allow-dirty", "--no-unsafe-fixes", str(path)], cwd=tmp_path)
    assert proc.code == 1 and path.read_text() == GROUP
    assert "unsafe fixes not written" in proc.stdout
    proc = run_cli(["apply", "--allow-dirty", str(path)], cwd=tmp_path)
    assert proc.code == 0, proc.stdout + proc.stderr
    assert "torch.export.save" in path.read_text()


def test_json_and_sarif_carry_the_applicability(tmp_path):
    path = tmp_path / "m.py"
    path.write_text(GROUP + SAFE_ONLY.split("\n\n\n", 1)[1], encoding="utf-8")
    proc = run_cli(["scan", "--no-cache", "--format", "json", str(path)], cwd=tmp_path)
    doc = json.loads(proc.stdout)
    kinds = {f["rule"]: f["applicability"] for f in doc["findings"]}
    assert kinds == {"MIG102": "unsafe", "MIG201": "unsafe", "MIG111": "safe"}
    proc = run_cli(["scan", "--no-cache", "--format", "sarif", str(path)], cwd=tmp_path)
    results = json.loads(proc.stdout)["runs"][0]["results"]
    assert {r["properties"]["applicability"] for r in results} == {"safe", "unsafe"}


def test_a_group_waiting_on_a_held_member_says_that_member_is_held(tmp_path):
    # The .ptl writer must stay (an Android loader reads model.ptl), so the planner holds it;
    # the trace and optimize_for_mobile of its group wait for it, and say why, not that it
    # was deselected.
    files = {
        "export.py": (
            "import torch\n"
            "from torch.utils.mobile_optimizer import optimize_for_mobile\n\n\n"
            "def chained(model, x):\n"
            "    traced = torch.jit.trace(model, (x,))\n"
            '    optimize_for_mobile(traced)._save_for_lite_interpreter("model.ptl")\n'
        ),
        "android/app/src/main/java/com/example/app/MainActivity.java": (
            "package com.example.app;\n\nimport org.pytorch.LiteModuleLoader;\n"
            "import org.pytorch.Module;\n\npublic class MainActivity {\n"
            "  Module load() throws Exception {\n"
            '    return LiteModuleLoader.load(Assets.copy(this, "model.ptl"));\n  }\n}\n'
        ),
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    result = run_apply([str(tmp_path)], ScanOptions(use_git=False, cache=False), dry_run=True)
    by_rule = {f.rule: f for f in result.scan.findings if f.path.endswith("export.py")}
    assert "serving code outside Python loads `model.ptl`" in by_rule["MIG204"].message
    for rule in ("MIG102", "MIG203"):
        assert by_rule[rule].fix is FixKind.ASSISTED, rule
        assert "its group also needs MIG204 at line 7, col 5" in by_rule[rule].message
        assert "whose own fix is held back (see that finding)" in by_rule[rule].message
        assert "not selected" not in by_rule[rule].message
