"""`migrate verify --branches` and [tool.migrate.verify] defaults, through the real CLI.

Each test writes a small package to a temporary folder, puts it on PYTHONPATH and runs
`python -m migrate verify` as a subprocess (the way users and CI call it). The models are a
Linear layer or two, and the default candidates (export + ExecuTorch lowering) are replaced by
callables so that every run stays within a few seconds.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("executorch")

from tests.verify.conftest import REPO  # noqa: E402

pytestmark = pytest.mark.verify

GATE = """\
import torch


class Gate(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 4)

    def forward(self, x):
        y = self.fc(x)
        if y.sum() > 0:
            return y * 2
        return -y


class GateCond(Gate):
    \"\"\"The migrated form (what `migrate apply` writes for MIG131): both sides in the graph.\"\"\"

    def forward(self, x):
        y = self.fc(x)
        return torch.cond(y.sum() > 0, lambda t: t * 2, lambda t: -t, (y,))


class Plain(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 3)

    def forward(self, x, scale: float = 1.0):
        if x.dim() == 2 and self.training:
            x = x * 1.0
        return torch.relu(self.fc(x)) * scale


def _example():
    # The example's sum after fc is positive: the example takes the true side only.
    return (torch.ones(2, 4),)


def build():
    torch.manual_seed(0)
    model = Gate().eval()
    with torch.no_grad():
        model.fc.bias.fill_(1.0)
    return model, _example()


def build_migrated():
    model, example = build()
    migrated = GateCond().eval()
    migrated.load_state_dict(model.state_dict())
    return migrated, example


def build_plain():
    torch.manual_seed(0)
    return Plain().eval(), _example()
"""

LINEAR = """\
import torch


def build():
    torch.manual_seed(0)
    return torch.nn.Linear(4, 3).eval(), (torch.randn(2, 4),)


def build_perturbed():
    model, example = build()
    with torch.no_grad():
        model.bias.add_(1e-3)  # max abs error 1e-3: fails the float32 default atol 1e-5
    return model, example
"""


def _package(root: Path, name: str, source: str) -> Path:
    pkg = root / name
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "mod.py").write_text(source)
    return root


def _migrate(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(cwd), str(REPO), env.get("PYTHONPATH", "")])
    env["COLUMNS"] = "200"
    return subprocess.run(
        [sys.executable, "-m", "migrate", "verify", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


# --------------------------------------------------------------------------- --branches


@pytest.mark.slow  # a verify subprocess that imports torch and executorch and lowers: ~8 s CPU
def test_both_sides_are_found_and_compared(tmp_path):
    """A scripted reference keeps the branch; the migrated torch.cond model is compared with it
    on a sample of each side, although the example takes the true side only."""
    root = _package(tmp_path, "gatepkg", GATE)
    out = tmp_path / "out"
    result = _migrate(
        root,
        "gatepkg.mod:build",
        "--branches",
        "--original",
        "script",
        "--candidate",
        "gatepkg.mod:build_migrated",
        "--device",
        "cpu",
        "--samples",
        "0",
        "--out",
        str(out),
    )
    assert result.returncode == 0, result.stdout + result.stderr
    text = result.stdout
    assert "Branches gatepkg.mod.Gate" in text
    row = next(line for line in text.splitlines() if "Gate.forward: y.sum() > 0" in line)
    assert "11" in row  # the line of the condition in mod.py
    assert row.count("covered") == 2, row
    assert "agrees with the eager module" in text

    report = json.loads((out / "report.json").read_text())
    branches = report["branches"]
    assert branches["status"] == "pass" and branches["complete"] is True
    assert branches["reference"] == "script"
    (cond,) = branches["conditions"]
    assert (cond["function"], cond["line"], cond["condition"]) == (
        "Gate.forward",
        11,
        "y.sum() > 0",
    )
    assert cond["true"]["samples"] == ["example"]
    (false_sample,) = cond["false"]["samples"]
    assert false_sample != "example"
    # The false-side sample joined the comparison of every candidate.
    assert branches["samples_added"] == [false_sample]
    added = next(s for s in report["samples"] if s["name"] == false_sample)
    assert added["kind"] == "branch"
    assert added["covers"] == [{"condition": "Gate.forward:11 `y.sum() > 0`", "side": False}]
    (cell,) = report["results"]
    assert cell["candidate"] == "gatepkg.mod:build_migrated"
    assert cell["status"] == "pass" and cell["samples"] == 2
    assert report["verdict"] == "pass"


def test_trace_that_froze_a_branch_fails_naming_the_condition(tmp_path):
    """The default reference of a callable is a trace: it froze the example's (true) side."""
    root = _package(tmp_path, "frozenpkg", GATE)
    out = tmp_path / "out"
    result = _migrate(
        root,
        "frozenpkg.mod:build",
        "--branches",
        "--no-default-candidates",  # no candidate at all: the branch check alone decides
        "--device",
        "cpu",
        "--samples",
        "0",
        "--out",
        str(out),
    )
    assert result.returncode == 1, result.stdout + result.stderr
    text = result.stdout
    assert "FAIL the reference (torch.jit.trace) disagrees with the eager module" in text
    assert "the trace froze the true side of Gate.forward:11 `y.sum() > 0`" in text
    assert "verdict: MISMATCH" in text

    report = json.loads((out / "report.json").read_text())
    assert report["results"] == []
    assert report["verdict"] == "mismatch" and report["exit_code"] == 1
    branches = report["branches"]
    assert branches["status"] == "fail" and branches["reference"] == "trace"
    trace = branches["trace"]
    assert trace["agrees"] is False
    (mismatch,) = trace["mismatches"]
    assert mismatch["sample"] == branches["conditions"][0]["false"]["samples"][0]
    (flip,) = mismatch["flipped"]
    assert flip["condition"]["condition"] == "y.sum() > 0"
    assert (flip["reference_side"], flip["sample_side"]) == (True, False)
    assert "froze the true side of Gate.forward:11 `y.sum() > 0`" in mismatch["message"]


def test_module_without_data_dependent_branches_says_so(tmp_path):
    root = _package(tmp_path, "plainpkg", GATE)
    result = _migrate(
        root,
        "plainpkg.mod:build_plain",
        "--branches",
        "--candidate",
        "plainpkg.mod:build_plain",
        "--device",
        "cpu",
        "--samples",
        "2",
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Branches plainpkg.mod.Plain" in result.stdout
    # Shape tests and self.training are not data-dependent.
    assert "no data-dependent branches in forward" in result.stdout
    assert "agrees with the eager module on 3 samples" in result.stdout


@pytest.mark.slow  # two verify subprocesses that import torch and executorch: ~8 s CPU
def test_archive_uses_its_class_source_or_says_it_needs_it(tmp_path, monkeypatch):
    """A traced archive whose class imports is checked like a callable; one whose class was
    defined in a script cannot be, and the user is told why in one line."""
    root = _package(tmp_path, "archpkg", GATE)
    monkeypatch.syspath_prepend(str(root))
    model, example = importlib.import_module("archpkg.mod").build()

    class Local(torch.nn.Module):
        def forward(self, x):
            return x * 2 if x.sum() > 0 else x

    Local.__module__ = "__main__"  # as if traced in a script
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.jit.save(torch.jit.trace(model, example), str(root / "gate.pt"))
        torch.jit.save(torch.jit.trace(Local(), example), str(root / "local.pt"))
    torch.save(example, root / "inputs.pt")
    common = ("--inputs", "inputs.pt", "--branches", "--no-default-candidates", "--device", "cpu")
    result = _migrate(root, "gate.pt", *common, "--format", "json")
    assert result.returncode == 1, result.stdout + result.stderr
    branches = json.loads(result.stdout)["branches"]
    assert branches["module"] == "archpkg.mod.Gate" and branches["reference"] == "archive"
    assert branches["status"] == "fail"
    assert "y.sum() > 0" in branches["trace"]["mismatches"][0]["message"]

    result = _migrate(root, "local.pt", *common)
    assert result.returncode == 2
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("error: usage: --branches needs the module's Python source")
    assert "Local" in line and "__main__" in line


# --------------------------------------------------------------------------- [tool.migrate.verify]


def _project(tmp_path: Path, table: str) -> Path:
    root = _package(tmp_path, "linpkg", LINEAR)
    (root / "pyproject.toml").write_text(f"[project]\nname = 'x'\n\n[tool.migrate.verify]\n{table}")
    return root


ARGS = ("linpkg.mod:build", "--candidate", "linpkg.mod:build_perturbed", "--device", "cpu")


@pytest.fixture
def in_project(invoke, monkeypatch):
    """Run `migrate verify` in-process (CliRunner) from a project folder: the closest
    pyproject.toml is looked up from the current directory for a callable target."""

    def run(root: Path, *args: str) -> subprocess.CompletedProcess:
        monkeypatch.chdir(root)
        monkeypatch.syspath_prepend(str(root))
        result = invoke("verify", *args)
        return subprocess.CompletedProcess(args, result.exit_code, result.stdout, result.stderr)

    return run


def test_config_tolerance_changes_the_verdict_and_a_flag_wins(tmp_path, in_project):
    root = _project(tmp_path, "atol = 0.01\nsamples = 1\nseed = 3\n")
    result = in_project(root, *ARGS, "--format", "json")
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(result.stdout)
    assert report["verdict"] == "pass"
    assert report["settings"]["config"] == str(root / "pyproject.toml")
    assert sorted(report["settings"]["from_config"]) == ["atol", "samples", "seed"]
    assert report["settings"]["atol"] == 0.01 and report["seed"] == 3
    assert len(report["samples"]) == 2  # the example + samples = 1
    leaf = report["results"][0]["leaves"][0]
    assert leaf["atol"] == 0.01
    assert 5e-4 < report["results"][0]["max_abs"] < 2e-3

    # The command line wins over the file.
    result = in_project(root, *ARGS, "--atol", "1e-6", "--samples", "0", "--format", "json")
    assert result.returncode == 1, result.stdout + result.stderr
    report = json.loads(result.stdout)
    assert report["verdict"] == "mismatch"
    assert report["settings"]["atol"] == 1e-6 and report["settings"]["from_config"] == ["seed"]
    assert report["results"][0]["leaves"][0]["atol"] == 1e-6
    assert len(report["samples"]) == 1

    # --isolated ignores the file: the default 3 samples and seed 0.
    result = in_project(
        root,
        "linpkg.mod:build",
        "--candidate",
        "linpkg.mod:build",
        "--isolated",
        "--device",
        "cpu",
        "--format",
        "json",
    )
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(result.stdout)
    assert report["settings"]["config"] is None and report["settings"]["from_config"] == []
    assert len(report["samples"]) == 4 and report["seed"] == 0


@pytest.mark.parametrize(
    ("table", "key"),
    [('atol = "loose"\n', "verify.atol"), ("samples = 1.5\n", "verify.samples")],
)
def test_config_bad_type_is_one_line_naming_the_key(tmp_path, table, key):
    """A real process: nothing but the error line may reach the terminal."""
    root = _project(tmp_path, table)
    result = _migrate(root, *ARGS)
    assert result.returncode == 2
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("error: config: ") and f"`{key}`" in line
    assert "pyproject.toml" in line
    assert "Traceback" not in result.stdout + result.stderr
