"""`migrate record -- CMD`: the recorder rides into every Python process of the command (pytest
-n 2 workers, a subprocess child), records structure only, and leaves the command's exit code
and output as they were. One recorded run of a small project serves most tests."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DISTINCT = "31337.8125"  # put in a tensor by the recorded tests; must never reach the file

pytest.importorskip("torch")

MODEL = """
import torch


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(8, 2)

    def forward(self, x):
        return self.lin(x)
"""

TEST_A = f"""
import subprocess
import sys

import torch

from model import Net


def test_script_calls():
    m = torch.jit.script(Net())
    for batch in (2, 5):
        m(torch.full((batch, 8), {DISTINCT}))


def test_child_process():
    out = subprocess.run([sys.executable, "child.py"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    print(out.stdout)
"""

TEST_B = """
import torch

from model import Net


def test_trace_and_save(tmp_path):
    traced = torch.jit.trace(Net(), (torch.randn(3, 8),))
    traced(torch.randn(4, 8))
    torch.jit.save(traced, "net.pt")
    loaded = torch.jit.load("net.pt")
    loaded(torch.randn(6, 8))


def test_fails():
    print("visible output")
    assert 1 == 2
"""

CHILD = """
import torch

from model import Net

f = torch.jit.script(Net())
f(torch.zeros(7, 8))
print("child done")
"""


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("PYTEST_ADDOPTS", None)
    env.pop("PYTEST_XDIST_WORKER", None)
    # The project's pytest needs only xdist: each other installed plugin costs its
    # controller and both workers a second or more.
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    return env


def _project(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in {
        "model.py": MODEL,
        "test_a.py": TEST_A,
        "test_b.py": TEST_B,
        "child.py": CHILD,
    }.items():
        (folder / name).write_text(textwrap.dedent(text))
    return folder


def _record(folder: Path, *command: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "migrate", "record", "--", *command],
        cwd=folder,
        env=_env(),
        capture_output=True,
        text=True,
    )


PYTEST = (
    sys.executable,
    "-m",
    "pytest",
    "-q",
    "-p",
    "no:cacheprovider",
    "-p",
    "xdist.plugin",
    "-n",
    "2",
)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    folder = _project(tmp_path_factory.mktemp("rec") / "proj")
    run = _record(folder, *PYTEST)
    evidence = folder / ".migrate" / "evidence.json"
    return folder, run, json.loads(evidence.read_text()), evidence.read_text()


def _sites(data: dict, path: str) -> dict[str, dict]:
    return {s["api"]: s for s in data["sites"] if s["path"] == path}


def test_exit_code_of_a_failing_suite_is_kept(recorded):
    folder, run, data, _ = recorded
    assert run.returncode == 1, run.stderr  # pytest's code for failed tests
    assert "1 failed, 3 passed" in run.stdout
    assert data["runs"][-1]["exit_code"] == 1


@pytest.mark.slow  # two torch processes, one of them recorded: ~7 s CPU
def test_output_is_unchanged(tmp_path):
    folder = _project(tmp_path / "proj")
    (folder / "prog.py").write_text(
        "import sys\nimport torch\nm = torch.jit.script(torch.nn.ReLU())\n"
        "print(m(torch.ones(2)).tolist())\nprint('to stderr', file=sys.stderr)\nsys.exit(7)\n"
    )
    plain = subprocess.run(
        [sys.executable, "prog.py"], cwd=folder, env=_env(), capture_output=True, text=True
    )
    run = _record(folder, sys.executable, "prog.py")
    assert (run.returncode, run.stdout, run.stderr) == (7, plain.stdout, plain.stderr)
    assert plain.returncode == 7
    assert (folder / ".migrate" / "evidence.json").exists()


def test_every_process_is_recorded(recorded):
    folder, run, data, _ = recorded
    assert data["runs"][-1]["processes"] >= 3  # two xdist workers and the child
    a = _sites(data, "test_a.py")["torch.jit.script"]
    child = _sites(data, "child.py")["torch.jit.script"]
    b = _sites(data, "test_b.py")
    assert a["captured"] == [{"value": {"kind": "module", "class": "model.Net"}, "count": 1}]
    assert [c["axes"] for c in a["calls"]] == [[[[2, 5], [8]]]]
    assert [c["shapes"] for c in a["calls"]] == [[[[2, 8]], [[5, 8]]]]  # each call's, once
    assert child["calls"][0]["axes"] == [[[7], [8]]]
    trace = b["torch.jit.trace"]
    assert trace["examples"][0]["value"]["inputs"]["items"][0]["shape"] == [3, 8]
    assert trace["calls"][0]["axes"] == [[[4], [8]]]
    assert b["torch.jit.save"]["saved"] == ["net.pt"]
    assert b["torch.jit.save"]["saves_of"] == [f"test_b.py:{trace['line']}:torch.jit.trace"]
    assert b["torch.jit.load"]["loaded"] == ["net.pt"]
    assert b["torch.jit.load"]["calls"][0]["axes"] == [[[6], [8]]]


def test_no_tensor_values_are_recorded(recorded):
    _, _, data, text = recorded
    assert DISTINCT not in text and "31337" not in text
    a = _sites(data, "test_a.py")["torch.jit.script"]
    assert a["calls"][0]["args"] == [
        {"t": "tensor", "shape": [2, 8], "dtype": "float32", "device": "cpu"}
    ]


def test_site_digest_is_the_source_lines(recorded):
    from migrate.record.boot._migrate_recorder import line_digest

    folder, _, data, _ = recorded
    site = _sites(data, "test_a.py")["torch.jit.script"]
    line = (folder / "test_a.py").read_text().splitlines()[site["line"] - 1]
    assert "torch.jit.script(Net())" in line
    assert site["digest"] == line_digest(line)


def test_schema_holds(recorded):
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((ROOT / "migrate" / "record" / "evidence.schema.json").read_text())
    _, _, data, _ = recorded
    jsonschema.validate(data, schema)
    broken = json.loads(json.dumps(data))
    broken["sites"][0]["calls"] = [{"args": [{"t": "tensor", "value": 3.5}]}]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, schema)


@pytest.mark.slow  # two recorded torch runs: ~8 s CPU
def test_two_runs_merge(tmp_path):
    folder = _project(tmp_path / "proj")
    first = _record(folder, sys.executable, "child.py")
    (folder / "child.py").write_text(
        CHILD.replace("torch.zeros(7, 8)", "torch.zeros(7, 8))\nf(torch.zeros(3, 8)")
    )
    second = _record(folder, sys.executable, "child.py")
    assert (first.returncode, second.returncode) == (0, 0), second.stderr
    data = json.loads((folder / ".migrate" / "evidence.json").read_text())
    site = _sites(data, "child.py")["torch.jit.script"]
    assert len(data["runs"]) == 2
    assert site["count"] == 2
    assert site["calls"][0]["count"] == 3
    assert site["calls"][0]["axes"] == [[[3, 7], [8]]]
    assert site["calls"][0]["shapes"] == [[[7, 8]], [[3, 8]]]  # the two runs' shapes, once each


def test_changed_site_replaces_its_old_record(tmp_path):
    from migrate.record.merge import merge_sites

    old = {"path": "a.py", "line": 3, "api": "torch.jit.script", "digest": "0" * 16}
    new = {**old, "digest": "1" * 16, "count": 1, "calls": []}
    assert merge_sites([{**old, "count": 5, "calls": []}], [new]) == [new]


def test_program_without_torch_never_imports_it(tmp_path):
    (tmp_path / "prog.py").write_text("import sys\nprint('torch' in sys.modules)\n")
    run = _record(tmp_path, sys.executable, "prog.py")
    assert (run.returncode, run.stdout) == (0, "False\n")


def test_existing_sitecustomize_still_runs(tmp_path):
    (tmp_path / "site_dir").mkdir()
    (tmp_path / "site_dir" / "sitecustomize.py").write_text("import os\nos.environ['MARK'] = '1'\n")
    (tmp_path / "prog.py").write_text("import os\nprint(os.environ.get('MARK'))\n")
    env = _env()
    env["PYTHONPATH"] += os.pathsep + str(tmp_path / "site_dir")
    run = subprocess.run(
        [sys.executable, "-m", "migrate", "record", "--", sys.executable, "prog.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert (run.returncode, run.stdout) == (0, "1\n"), run.stderr


def test_missing_command_is_a_clear_error(tmp_path):
    run = _record(tmp_path, "no-such-program-xyz")
    assert run.returncode == 2
    assert run.stderr.strip() == (
        "error: migrate record: cannot run `no-such-program-xyz`: No such file or directory"
    )


def test_damaged_evidence_file_is_a_clear_error(tmp_path):
    (tmp_path / ".migrate").mkdir()
    (tmp_path / ".migrate" / "evidence.json").write_text("{not json")
    run = _record(tmp_path, sys.executable, "-c", "pass")
    assert run.returncode == 2
    assert "evidence.json: not an evidence file (invalid JSON" in run.stderr
