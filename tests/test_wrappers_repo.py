"""The wrappers sample repository (fixtures/repos/wrappers, issue 27 item 7): a library whose
TorchScript goes through its own wrappers (`convert_to_torchscript`, `save_net_with_metadata`
/ `load_net_with_metadata`) and a test helper `check_script_save(net, *inputs)` used by
several tests, and `export_with_metadata`, a wrapper calling two of them. Every call of a
wrapper is reported (MIG121) and linked in the artifact flow; under `--intent drop
--unsafe-fixes --test` the helper becomes an export round trip, the public wrappers move to
torch.export with every call (passing the example inputs the program uses), and the
program's numbers and the tests stay."""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from migrate.facts import build_facts
from tests.scan_support import ROOT, clean_env, run_cli

SAMPLE = ROOT / "fixtures" / "repos" / "wrappers"
WRAPPERS = (
    "convert_to_torchscript",
    "save_net_with_metadata",
    "load_net_with_metadata",
    "export_with_metadata",
)
HELPER = "check_script_save"
CALL = re.compile(rf"(?:\w+\.)?\b({'|'.join((*WRAPPERS, HELPER))})\(")  # `utils.f(` too


def _call_sites() -> dict[tuple[str, int, int], str]:
    """Every call of a wrapper in the sample, found by reading its text: (path, line, column)."""
    out = {}
    for path in sorted(SAMPLE.rglob("*.py")):
        rel = path.relative_to(SAMPLE).as_posix()
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if line.lstrip().startswith(("def ", "from ", "import ")):
                continue
            for match in CALL.finditer(line):
                out[(rel, number, match.start() + 1)] = match.group(1)
    return out


def _scan(root: Path, *args: str) -> list[dict]:
    run = run_cli(["scan", ".", "--no-cache", "--format", "json", *args], cwd=root)
    assert run.code in (0, 1), run.stderr
    return json.loads(run.stdout)["findings"]


def test_every_wrapper_call_is_reported_with_its_role():
    sites = _call_sites()
    assert len(sites) == 16
    found = {(f["path"], f["line"], f["column"]): f for f in _scan(SAMPLE) if f["rule"] == "MIG121"}
    assert sites.keys() <= found.keys()
    for key, name in sites.items():
        assert f"`{name}(...)` calls the repository's TorchScript wrapper" in found[key]["message"]
    roles = {key: found[key]["message"].split("this call is ", 1)[1] for key in sites}
    assert roles[("medlib/export.py", 7, 5)].startswith("a capture and a producer (writes `DENOISE")
    assert roles[("medlib/export.py", 8, 16)].startswith("a capture;")
    assert roles[("medlib/export.py", 9, 5)].startswith("a producer of `CLASSIFIER_PATH`")
    assert roles[("medlib/infer.py", 14, 17)].startswith("a consumer of `CLASSIFIER_PATH`")
    # A wrapper calling wrappers: its calls are call sites, its body's calls too.
    assert roles[("tests/test_utils.py", 28, 5)].startswith("a capture and a producer (writes `p")
    assert roles[("medlib/utils.py", 37, 15)].startswith("a capture;")
    # One finding per wrapper, at its definition, says why the group stays (public API).
    definitions = [k for k in found if k not in sites]
    assert sorted(definitions) == [
        ("medlib/utils.py", 8, 1),
        ("medlib/utils.py", 22, 1),
        ("medlib/utils.py", 28, 1),
        ("tests/helpers.py", 6, 1),
    ]
    public = found[("medlib/utils.py", 8, 1)]["message"]
    assert "it is public API" in public
    assert "it is public API" not in found[("tests/helpers.py", 6, 1)]["message"]


def test_writers_and_readers_through_wrappers_are_linked():
    facts = build_facts(SAMPLE)
    by_line = {(s.span.display, s.span.line): s for s in facts.sites}
    save = by_line[("medlib/export.py", 9)]
    load = by_line[("medlib/infer.py", 14)]
    assert save.role == "producer" and load.role == "consumer"
    assert save.key == load.key == "classifier.pt"
    assert facts.consumers_of(save) == [load] and facts.producers_of(load) == [save]
    plain_load = by_line[("medlib/infer.py", 8)]  # torch.jit.load(DENOISE_PATH)
    assert [(p.span.display, p.span.line) for p in facts.producers_of(plain_load)] == [
        ("medlib/export.py", 7)
    ]
    # The helper's save and load of one io.BytesIO are one in-memory archive.
    helper_save, helper_load = by_line[("tests/helpers.py", 11)], by_line[("tests/helpers.py", 13)]
    assert helper_save.key == helper_load.key and helper_save.key.startswith("<memory ")
    findings = _scan(SAMPLE)
    held = next(f for f in findings if (f["path"], f["line"]) == ("medlib/infer.py", 8))
    assert (
        "`denoise.pt` is written by medlib/export.py:7 (a call of the wrapper "
        "`medlib.utils.convert_to_torchscript`, MIG121)" in held["message"]
    )


def test_wrappers_are_found_through_reexports_relative_and_wrapped_imports(tmp_path):
    files = {
        "pkg/__init__.py": "from .io import export_net as export\n",
        "pkg/io.py": (
            "import torch\n\n\ndef export_net(net, path):\n    torch.jit.script(net).save(path)\n"
            "\n\ndef unused(net):\n    return torch.jit.script(net)\n"
        ),
        "pkg/use.py": "from pkg import export\n\n\ndef main(n):\n    export(n, 'n.pt')\n",
        "pkg/more.py": "from .io import (\n    export_net,\n)\n\nexport_net(None, 'm.pt')\n",
        "pkg/attr.py": "from pkg import io\n\nio.export_net(None, 'a.pt')\n",
        "pkg/other.py": "def export_net(a, b):\n    pass\n\n\nexport_net(1, 2)\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    found = {(f["path"], f["line"]) for f in _scan(tmp_path) if f["rule"] == "MIG121"}
    # Called through a package re-export, a parenthesised relative import and a module
    # attribute; `unused` is called nowhere and a same-named function elsewhere is not it.
    assert found == {("pkg/io.py", 4), ("pkg/use.py", 5), ("pkg/more.py", 5), ("pkg/attr.py", 3)}


def test_keep_scriptable_and_no_intent_keep_the_helper(tmp_path):
    for intent in ("keep-scriptable", None):
        root = tmp_path / str(intent)
        shutil.copytree(SAMPLE, root, ignore=shutil.ignore_patterns("__pycache__"))
        extra = ["--intent", intent] if intent else []
        run = run_cli(["apply", ".", "--unsafe-fixes", "--allow-dirty", "--no-cache", *extra], root)
        assert run.code in (0, 1), run.stderr
        assert (root / "tests/helpers.py").read_text() == (SAMPLE / "tests/helpers.py").read_text()
        helper = next(
            f for f in _scan(root, *extra) if (f["path"], f["line"]) == ("tests/helpers.py", 6)
        )
        if intent:
            assert "It stays: it checks scriptability (intent keep-scriptable)" in helper["message"]
        else:
            assert "under `--intent drop` it becomes an export round trip" in helper["message"]
        # Its calls stay with it: assisted, naming it.
        calls = [f for f in _scan(root, *extra) if f["message"].startswith(f"`{HELPER}(...)`")]
        assert len(calls) == 4
        for f in calls:
            assert f["fix"] == "assisted" and f["applicability"] is None
            assert f["message"].endswith(
                "it moves with the wrapper (see its finding at tests/helpers.py:6)"
            )


torch_needed = pytest.mark.skipif(
    subprocess.run([sys.executable, "-c", "import torch"], capture_output=True).returncode != 0,
    reason="needs torch",
)
STILL_TESTS = """\
import torch
from tests.helpers import check_script_save

class Branchy(torch.nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            return x + 1
        return x - 1

try:
    check_script_save(Branchy(), torch.ones(2))
except Exception as exc:
    print("refused", type(exc).__name__)
"""


def _python(root: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(root), "PYTHONWARNINGS": "ignore"}
    return subprocess.run(
        [sys.executable, *args], cwd=root, env=env, capture_output=True, text=True, timeout=300
    )


def _numbers(root: Path, work: Path) -> dict:
    work.mkdir()
    run = _python(root, "run.py", str(work))
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


TEST_COMMAND = "python -m pytest -q -p no:cacheprovider tests && python run.py"


@torch_needed
@pytest.mark.slow  # the sample's suite and program, before, in the gate's trials and after
def test_drop_migrates_the_wrappers_and_every_call_and_keeps_numbers_and_tests(tmp_path):
    import torch

    before = _numbers(SAMPLE, tmp_path / "before")
    root = tmp_path / "drop"
    shutil.copytree(SAMPLE, root, ignore=shutil.ignore_patterns("__pycache__", ".scan-cache"))
    findings = _scan(root, "--intent", "drop")
    args = ["apply", ".", "--intent", "drop", "--unsafe-fixes", "--allow-dirty", "--no-cache"]
    # The gate runs the suite and the program at least twice: longer than run_cli allows.
    run = subprocess.run(
        [sys.executable, "-m", "migrate", *args, "--test", TEST_COMMAND],
        cwd=root,
        env=clean_env(root),
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert run.returncode in (0, 1), run.stderr
    fixed = re.search(r"Fixed (\d+) findings? in", run.stdout)
    assert fixed is not None, run.stdout
    # The share of findings fixed and kept by the sample's tests and program.
    assert int(fixed.group(1)) / len(findings) >= 0.8, run.stdout
    assert "reverted" not in run.stdout, run.stdout
    # No TorchScript left, anywhere: the wrappers export, their callers pass examples.
    left = [
        (p.relative_to(root).as_posix(), n)
        for p in root.rglob("*.py")
        for n, line in enumerate(p.read_text().splitlines(), 1)
        if "torch.jit" in line
    ]
    assert left == []
    utils = (root / "medlib/utils.py").read_text()
    assert "torch.export.export(model, (inputs[0],))" in utils
    assert "torch.export.save(jit_obj, filename, extra_files=extra)" in utils
    export = (root / "medlib/export.py").read_text()
    assert "inputs=[torch.linspace(-1.0, 1.0, 2 * 5 * 5).reshape(1, 2, 5, 5)]" in export
    # Not a comparison of an object with itself: the loaded program against `net`, the
    # exported program against the model.
    for path, expected in {
        "tests/helpers.py": [["loaded", "net"]],
        "medlib/utils.py": [["script_module.module()", "model"]],
    }.items():
        tree = ast.parse((root / path).read_text())
        compares = [
            [ast.unparse(a.func) for a in n.args]
            for n in ast.walk(tree)
            if isinstance(n, ast.Call) and ast.unparse(n.func).endswith("assert_close")
        ]
        assert compares == expected, path
    after = _numbers(root, tmp_path / "after")
    assert after.keys() == before.keys()
    for key in before:
        torch.testing.assert_close(torch.tensor(after[key]), torch.tensor(before[key]), msg=key)
    tests = _python(root, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests")
    assert tests.returncode == 0 and "7 passed" in tests.stdout, tests.stdout + tests.stderr
    # It still tests something: a module export cannot capture is refused by the helper.
    refused = _python(root, "-c", STILL_TESTS)
    assert refused.returncode == 0 and "refused" in refused.stdout, refused.stderr
