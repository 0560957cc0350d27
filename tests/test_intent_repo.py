"""The intent sample repository (fixtures/repos/intent_lib: a library whose benchmark scripts
its model, helpers with is_scripting/is_tracing branches, an interface, overload stubs, Final
attributes, a scripted helper, its own tests), run before and after `migrate apply --intent
drop --unsafe-fixes` and `--intent keep-scriptable`, each in a fresh interpreter."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.scan_support import ROOT, jit_lines, run_cli

torch = pytest.importorskip("torch")

SAMPLE = ROOT / "fixtures" / "repos" / "intent_lib"
PROGRAMS = ("run.py", "benchmark.py")
SCRIPT_IT = """\
import torch
from intent_lib import build_model
from intent_lib.layers import Block, Gelu, Head
model = build_model()
x = torch.randn(3, 8)
torch.testing.assert_close(torch.jit.script(model)(x), model(x))
for module in (Block(8, Gelu()), Head(8, 3)):
    torch.testing.assert_close(torch.jit.script(module)(x), module(x))
print("scripted")
"""


def _python(root: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(root), "PYTHONWARNINGS": "ignore"}
    return subprocess.run(
        [sys.executable, *args], cwd=root, env=env, capture_output=True, text=True, timeout=300
    )


def _outputs(root: Path) -> dict:
    out = {}
    for program in PROGRAMS:
        run = _python(root, program)
        assert run.returncode == 0, run.stderr
        out[program] = json.loads(run.stdout)
        out[program].pop("ms", None)  # the benchmark's timing
    return out


def _migrated(tmp_path: Path, intent: str) -> Path:
    root = tmp_path / intent
    shutil.copytree(SAMPLE, root, ignore=shutil.ignore_patterns("__pycache__"))
    args = ["apply", ".", "--intent", intent, "--unsafe-fixes", "--allow-dirty", "--no-cache"]
    run = run_cli(args, cwd=root)
    assert run.code in (0, 1), run.stderr
    return root


@pytest.fixture(scope="module")
def before() -> dict:
    return _outputs(SAMPLE)


def _same_numbers(got: dict, expected: dict) -> None:
    assert got.keys() == expected.keys()
    for program, values in expected.items():
        for key, value in values.items():
            torch.testing.assert_close(
                torch.tensor(got[program][key]), torch.tensor(value), msg=f"{program} {key}"
            )


@pytest.mark.slow  # the sample's programs run before and after in torch processes: ~23 s CPU
def test_drop_removes_every_torch_jit_line_and_keeps_the_numbers(tmp_path, before):
    assert len(jit_lines(SAMPLE)) == 12
    root = _migrated(tmp_path, "drop")
    assert jit_lines(root) == []
    _same_numbers(_outputs(root), before)
    tests = _python(root, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests")
    assert tests.returncode == 0, tests.stdout + tests.stderr


@pytest.mark.slow  # the sample's programs in torch processes, before and after: ~12 s CPU
def test_keep_scriptable_changes_what_warns_and_stays_scriptable(tmp_path, before):
    root = _migrated(tmp_path, "keep-scriptable")
    left = jit_lines(root)
    # The calls that warn in torch 2.13 went (the benchmark's two scripts, the decorator);
    # what TorchScript reads stayed: is_scripting/is_tracing, annotate, Final, the
    # interface, the overload stubs, @torch.jit.unused.
    assert len(left) == len(jit_lines(SAMPLE)) - 3
    assert not any("torch.jit.script" in line for line in left)
    assert sum("is_scripting" in line for line in left) == 2
    _same_numbers(_outputs(root), before)
    scripted = _python(root, "-c", SCRIPT_IT)
    assert scripted.returncode == 0 and "scripted" in scripted.stdout, scripted.stderr
