"""A call of the repository's own wrapper (MIG121) is fixed with the wrapper: auto, riding on
the wrapper's body findings, when every one of them is written in this run (counted in
`Fixed N`, reverted with them by `apply --test`); assisted, naming the wrapper, when not."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from migrate.findings import Applicability, Edit, Finding, Fix, FixKind
from migrate.plan.fixplan import plan_fixes
from migrate.plan.units import WITH_UNSAFE, WRITABLE, fix_units

ROOT = Path(__file__).resolve().parent.parent
HELD = "; it moves with the wrapper (see its finding at pkg/w.py:3)"


def _body(applicability: Applicability = Applicability.SAFE) -> Finding:
    fix = Fix((Edit(40, 57, "model"),), (), applicability)
    return Finding(
        "pkg/w.py", 4, 16, 4, 33, "MIG101", "torch.jit.script", "m; fix", FixKind.AUTO, (), fix
    )


def _call(line: int = 7) -> Finding:
    data = (
        ("body", "3-5"),
        ("role", "capture"),
        ("wrapper", "pkg.w.run"),
        ("wrapper_file", "pkg/w.py"),
    )
    message = "`run(...)` calls the repository's TorchScript wrapper: this call is a capture" + HELD
    return Finding(
        "tests/t.py", line, 5, line, 20, "MIG121", "pkg.w.run", message, FixKind.ASSISTED, data
    )


def _plan(findings, allowed, rules=()):
    return plan_fixes(findings, allowed, {"MIG101", "MIG121"}, None, rules=list(rules)).findings


def test_a_call_rides_on_its_wrappers_fix_and_is_held_with_it():
    body = _body(Applicability.UNSAFE)
    planned = _plan([body, _call(7), _call(9)], WITH_UNSAFE)
    calls = [f for f in planned if f.rule == "MIG121"]
    assert [(c.fix, c.applicability) for c in calls] == [(FixKind.AUTO, Applicability.UNSAFE)] * 2
    assert "fixed with the wrapper, whose body is rewritten in this run (MIG101 at line 4" in (
        calls[0].message
    )
    # One unit, in the wrapper's file: its edits, then the calls that ride on it.
    units, held = fix_units(planned, WITH_UNSAFE)
    assert held == [] and len(units) == 1
    assert units[0].path == "pkg/w.py" and units[0].edits == list(body.autofix.edits)
    assert [f.rule for f in units[0].findings] == ["MIG101", "MIG121", "MIG121"]
    # The wrapper's fix held (unsafe, no --unsafe-fixes): the calls stay assisted, as the scan
    # planned for every fix said otherwise (apply plans again for its own run).
    again = _plan(planned, WRITABLE)
    calls = [f for f in again if f.rule == "MIG121"]
    assert all(c.fix is FixKind.ASSISTED and c.autofix is None for c in calls)
    assert calls[0].message == _call().message
    # A rider whose wrapper's fix is not among the units is held, naming it.
    units, held = fix_units([planned[1]], WITH_UNSAFE)
    assert units == [] and "its wrapper's fix (MIG101 at line 4 in pkg/w.py) is held" in (
        held[0].reason
    )


def test_a_call_stays_assisted_when_the_planner_holds_the_wrapper():
    def hold_body(ctx):
        return {("pkg/w.py", "MIG101@4:16"): "its result is used elsewhere"}

    planned = _plan([_body(), _call()], WITH_UNSAFE, [hold_body])
    call = next(f for f in planned if f.rule == "MIG121")
    assert call.fix is FixKind.ASSISTED and call.message.endswith(HELD)
    # A wrapper whose body has no finding of the run (its rule not selected) moves nothing.
    assert _plan([_call()], WITH_UNSAFE)[0].fix is FixKind.ASSISTED


# --------------------------------------------------------------------------- apply --test

FAKE_TORCH = {
    "torch/__init__.py": "from torch import export, jit, testing\n",
    "torch/jit.py": """
        from torch._store import load, save


        class ScriptModule:
            def __init__(self, net):
                self.net = net

            def __call__(self, *args):
                return self.net(*args)


        def script(net):
            return ScriptModule(net)
        """,
    "torch/export.py": """
        from torch._store import load, save


        class ExportedProgram:
            def __init__(self, net):
                self.net = net

            def module(self):
                return self.net


        def export(net, args):
            return ExportedProgram(net)
        """,
    # One archive store for both formats (the helper saves and loads one of them at a time).
    "torch/_store.py": """
        _saved = []


        def save(obj, f):
            _saved.append(obj)


        def load(f):
            return _saved.pop()
        """,
    "torch/testing.py": """
        def assert_close(a, b):
            assert a == b, (a, b)
        """,
}
REPO = {
    "tests/__init__.py": "",
    "tests/helpers.py": """
        import io

        import torch


        def check_script_save(net, *inputs):
            scripted = torch.jit.script(net)
            buffer = io.BytesIO()
            torch.jit.save(scripted, buffer)
            buffer.seek(0)
            loaded = torch.jit.load(buffer)
            torch.testing.assert_close(loaded(*inputs), net(*inputs))
            return loaded
        """,
    "tests/test_nets.py": """
        from tests.helpers import check_script_save


        def double(x):
            return 2 * x


        def test_double():
            check_script_save(double, 3)


        def test_again():
            check_script_save(double, 4)
        """,
}
# A test that needs the helper to hand back TorchScript: the helper's rewrite breaks it.
NEEDS_SCRIPT = """
    from tests.helpers import check_script_save
    from tests.test_nets import double


    def test_kind():
        assert type(check_script_save(double, 1)).__name__ == "ScriptModule"
    """


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")


def _migrate(root: Path, fake: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "MIGRATE_"))}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(fake)])  # scan/apply never import it
    env["MIGRATE_CACHE_DIR"] = str(root.parent / "cache")
    # The --test gate's pytest runs needs no plugin; loading the installed ones costs seconds.
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    command = [sys.executable, "-m", "migrate", *args, "--intent", "drop", "--no-cache"]
    return subprocess.run(command, cwd=root, env=env, capture_output=True, text=True, timeout=300)


def _calls(root: Path, fake: Path) -> list[dict]:
    run = _migrate(root, fake, "scan", ".", "--format", "json")
    assert run.returncode in (0, 1), run.stderr
    return [f for f in json.loads(run.stdout)["findings"] if f["rule"] == "MIG121"]


def _repo(tmp_path: Path, name: str, *extra: tuple[str, str]) -> tuple[Path, Path]:
    fake, root = tmp_path / "fake", tmp_path / name
    _write(fake, FAKE_TORCH)
    _write(root, {**REPO, **dict(extra)})
    return root, fake


def test_apply_counts_the_calls_with_the_helper_and_the_test_gate_reverts_them_with_it(tmp_path):
    root, fake = _repo(tmp_path, "kept")
    calls = [f for f in _calls(root, fake) if f["path"] == "tests/test_nets.py"]
    assert [(f["fix"], f["applicability"]) for f in calls] == [("auto", "unsafe")] * 2
    # The helper's group (MIG121, MIG101, MIG201, MIG202) and its two calls; one file written.
    run = _migrate(root, fake, "apply", ".", "--unsafe-fixes", "--dry-run")
    assert "Would fix 6 findings in 1 file." in run.stdout, run.stdout
    run = _migrate(root, fake, "apply", ".", "--unsafe-fixes", "--allow-dirty")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "Fixed 6 findings in 1 file." in run.stdout, run.stdout
    assert "torch.export.export(net, inputs)" in (root / "tests/helpers.py").read_text()
    assert _calls(root, fake) == []  # nothing left to show at the calls

    root, fake = _repo(tmp_path, "reverted", ("tests/test_kind.py", NEEDS_SCRIPT))
    gate = f"{sys.executable} -m pytest -q -p no:cacheprovider tests"
    run = _migrate(root, fake, "apply", ".", "--unsafe-fixes", "--allow-dirty", "--test", gate)
    assert "Fixed 0 findings" in run.stdout, run.stdout
    assert "reverted tests/helpers.py:6:1 MIG121+MIG101+MIG201+MIG202 (group of 7)" in run.stdout
    assert "torch.jit.script(net)" in (root / "tests/helpers.py").read_text()
    # Reverted with the helper: the calls are left for review, not counted as fixed.
    assert run.stdout.count("reverted: it broke tests/test_kind.py::test_kind") >= 3
    left = sorted((f["path"], f["line"]) for f in _calls(root, fake))
    assert left == [
        ("tests/helpers.py", 6),
        ("tests/test_kind.py", 6),
        ("tests/test_nets.py", 9),
        ("tests/test_nets.py", 13),
    ]
