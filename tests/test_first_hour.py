"""The first hour with migrate (issue 30): usage errors before torch loads, one exit-code
rule, help and rule texts without small faults, locations that stay locations."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from migrate.registry import all_rules
from tests.scan_support import clean_env, git, run_cli, write_tree

ROOT = Path(__file__).resolve().parent.parent
HEAVY = {"torch", "executorch", "numpy"}


def imported_modules(args: list[str], cwd: Path) -> tuple[subprocess.CompletedProcess, set[str]]:
    """`python -X importtime -m migrate ARGS`: the run and the top-level modules it imported."""
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "migrate", *args],
        cwd=cwd,
        env=clean_env(cwd),
        capture_output=True,
        text=True,
        timeout=300,
    )
    modules = {
        line.rsplit("|", 1)[1].strip().split(".")[0]
        for line in proc.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }
    return proc, modules


def error_lines(proc: subprocess.CompletedProcess) -> list[str]:
    return [line for line in proc.stderr.splitlines() if not line.startswith("import time:")]


FORMS = ("archive", "folder of archives", "--manifest", "package.module:callable")


@pytest.mark.parametrize(
    "args, says",
    [
        (["verify", "/nonexistent/model.pt"], "no such file: /nonexistent/model.pt"),
        (["verify"], "give a TorchScript archive"),
        (["verify", "notes.txt"], "notes.txt is not a TorchScript archive"),
        (["verify", "nosuchpkg.models:build"], "cannot import nosuchpkg.models:build"),
        (["verify", "--manifest", "missing.jsonl", "--out", "o"], "--manifest missing.jsonl"),
        (["convert", "model.pt"], "convert needs example inputs"),
        (["convert", "absent.pt", "--input-shape", "1x3"], "no such file: absent.pt"),
        (["convert"], "give a TorchScript archive"),
        # Every option's value is read before torch is imported (options.check_options).
        (["convert", "model.pt", "--input-shape", "1by16"], "--input-shape: malformed"),
        (["convert", "model.pt", "--input-shape", "0x16"], "size 0: every size must be 1"),
        (["convert", "model.pt", "--input-shape", "2x-3"], "size -3"),
        (["convert", "notes.txt", "--input-shape", "0x16"], "'0x16'"),  # the shape, first
        (["convert", "model.pt", "--input-shape", "2x3:floaty"], "unknown dtype 'floaty'"),
        (["convert", "model.pt", "--input-shape", "2x3", "--method", "__init__"], "--method"),
        (["convert", "model.pt", "--input-shape", "2x3", "--backend", "vulkan"], "--backend"),
        (["convert", "model.pt", "--input-shape", "2x3", "--dynamic-dim", "0:9:1"], "min > max"),
        (["verify", "model.pt", "--input-shape", "2x3", "--dynamic-dim", "1:0:1:4"], "input 1"),
        (["verify", "model.pt", "--input-shape", "2x3", "--dynamic-dim", "0:5:9"], "size 2"),
        (["verify", "model.pt", "--device", "gpu"], "--device: unknown device 'gpu'"),
        (["verify", "model.pt", "--device", "cuda:x"], "unknown device 'cuda:x'"),
        (["verify", "model.pt", "--original", "jit"], "--original must be trace or script"),
        (["verify", "model.pt", "--candidate", "absent.pt2"], "--candidate absent.pt2"),
        (["verify", "model.pt", "--candidate", "notes.txt"], "expected a .pt2 or .pte"),
        (["verify", "model.pt", "--inputs", "absent.pt"], "--inputs absent.pt: no such file"),
        (["verify", "model.pt", "--max-input-bytes", "0"], "--max-input-bytes"),
        (["verify", "model.pt", "--out", "notes.txt"], "--out notes.txt: exists"),
        (["verify", "model.pt", "--samples", "many"], "'--samples'"),  # click's, in one line
        (["convert", "model.pt", "--no-such-flag"], "--no-such-flag"),
    ],
)
def test_usage_errors_answer_before_torch_is_imported(tmp_path, args, says):
    (tmp_path / "model.pt").write_bytes(b"PK\x05\x06" + b"\0" * 18)  # an empty zip archive
    (tmp_path / "notes.txt").write_text("not an archive\n", encoding="utf-8")
    proc, modules = imported_modules(args, tmp_path)
    assert proc.returncode == 2, proc.stderr
    lines = error_lines(proc)
    assert len(lines) == 1 and says in lines[0], lines
    assert not modules & HEAVY, sorted(modules & HEAVY)


def test_verify_usage_lists_every_accepted_form(tmp_path):
    proc, _ = imported_modules(["verify"], tmp_path)
    for form in FORMS:
        assert form in error_lines(proc)[0], form
    help_text = run_cli(["verify", "--help"], tmp_path, clean_env(tmp_path, COLUMNS="200"))
    flat = " ".join(help_text.stdout.split())
    for form in FORMS:
        assert form in flat, form


# --------------------------------------------------------------------------- exit codes


def _repo(tmp_path: Path, files: dict[str, str]) -> Path:
    root = write_tree(tmp_path / "repo", files)
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "start")
    return root


ASSISTED_ONLY = "import torch\n\n\ndef keep(model, path):\n    torch.jit.save(model, path)\n"
SAFE_ONLY = "import torch\n\n\ndef f(x):\n    return torch.jit.annotate(int, x) + 1\n"


@pytest.mark.parametrize(
    "source, dry, code",
    [
        (ASSISTED_ONLY, True, 1),  # nothing to change, a finding stays: 1 (was 0)
        (ASSISTED_ONLY, False, 1),
        (SAFE_ONLY, True, 1),  # a dry run writes nothing: the finding stays
        (SAFE_ONLY, False, 0),  # everything fixed
        ("import torch\n", True, 0),
    ],
)
def test_exit_code_is_one_while_findings_remain(tmp_path, source, dry, code):
    root = _repo(tmp_path, {"m.py": source})
    run = run_cli(["apply", *(["--dry-run"] if dry else []), "."], root, clean_env(tmp_path))
    assert run.code == code, run.stdout + run.stderr


def test_the_docs_state_the_exit_code_rule():
    section = (ROOT / "docs" / "exit-codes.md").read_text(encoding="utf-8")
    assert "1 while findings remain" in " ".join(section.split())
    row = next(line for line in section.splitlines() if line.startswith("| `apply --dry-run`"))
    assert "findings remain" in row


# --------------------------------------------------------------------------- text faults


def test_a_location_at_line_100_is_not_an_emoji(tmp_path):
    lines = ["import torch", "", ""] + [f"X{i} = 1" for i in range(94)]
    lines += ["", "def f(model, path):", "    torch.jit.save(model, path)"]
    root = _repo(tmp_path, {"m.py": "\n".join(lines) + "\n"})
    run = run_cli(["apply", "."], root, clean_env(tmp_path))
    assert "m.py:100:5 MIG201" in run.stdout, run.stdout
    assert "\N{HUNDRED POINTS SYMBOL}" not in run.stdout


def test_help_hides_docs_and_cuts_nothing(tmp_path):
    run = run_cli(["--help"], tmp_path, clean_env(tmp_path, COLUMNS="80"))
    commands = run.stdout.split("Commands:", 1)[1]
    assert "..." not in commands
    assert not re.search(r"^  docs\b", commands, re.M)
    assert re.search(r"^  verify\b", commands, re.M)
    # Every command's whole first sentence is there, wrapped rather than cut.
    flat = " ".join(commands.split())
    assert "assumption under PATHS." in flat
    assert "(exit 0 pass, 1 mismatch, 2 error)." in flat


def _doc_texts():
    for rule in all_rules().values():
        for field in ("what", "why", "use_instead", "fix_safety", "details"):
            text = getattr(rule, field, "") or ""
            if text:
                yield rule.code, field, " ".join(text.split())


def test_rule_texts_start_sentences_with_a_capital():
    # A sentence after a full stop starts with a capital or a code span (`torch.export`).
    abbreviations = {"e.g", "i.e", "etc", "vs", "cf"}
    bad = [
        (code, field, m.group(0))
        for code, field, text in _doc_texts()
        for m in re.finditer(r"(\S+)\. ([a-z]\w*)", re.sub(r"`[^`]*`", "`code`", text))
        if m.group(1).lstrip("(") not in abbreviations and not m.group(1).endswith("..")
    ]
    assert not bad, bad


def test_rule_texts_agree_on_the_architectures_cuda_13_drops():
    # CUDA 13.0 builds for compute capability 7.5 (Turing) and newer: 5.x, 6.x, 7.0 and 7.2
    # are gone, so the range ends at sm_72 everywhere it is given.
    ranges = {
        (code, m.group(1))
        for code, _, text in _doc_texts()
        for m in re.finditer(r"sm_50 ?(?:to|-|\.\.) ?(sm_\d+)", text)
    }
    assert ranges, "no rule names the range"
    assert {end for _, end in ranges} == {"sm_72"}, sorted(ranges)


# --------------------------------------------------------------------------- the suite


FLOOR_S = 60  # no fixed wait under this (a busy 2-core machine runs steps 10x slower)


def _fixed_waits(path: Path) -> list[tuple[int, int]]:
    """(line, seconds) of literal subprocess timeouts and `time.monotonic() + N` deadlines."""
    import ast

    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call):
            name = getattr(node.func, "attr", getattr(node.func, "id", ""))
            if name in ("run", "Popen", "communicate", "wait", "check_output", "call"):
                for kw in node.keywords:
                    if kw.arg == "timeout" and isinstance(kw.value, ast.Constant):
                        found.append((node.lineno, kw.value.value))
        if (
            isinstance(node, ast.BinOp)
            and isinstance(node.op, ast.Add)
            and isinstance(node.left, ast.Call)
            and getattr(node.left.func, "attr", "") == "monotonic"
            and isinstance(node.right, ast.Constant)
        ):
            found.append((node.lineno, node.right.value))
    return found


def test_no_short_fixed_wall_clock_waits_in_tests():
    short = [
        (str(path.relative_to(ROOT)), line, seconds)
        for path in sorted((ROOT / "tests").rglob("*.py"))
        for line, seconds in _fixed_waits(path)
        if isinstance(seconds, (int, float)) and seconds < FLOOR_S
    ]
    assert not short, short


def test_the_suite_prints_its_cpu_time_with_xdist_workers(tmp_path):
    (tmp_path / "test_burn.py").write_text(
        "import time\n\n\n"
        "def burn():\n"
        "    end = time.process_time() + 0.6\n"
        "    while time.process_time() < end:\n"
        "        pass\n\n\n"
        "def test_a():\n    burn()\n\n\n"
        "def test_b():\n    burn()\n",
        encoding="utf-8",
    )
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "tests.conftest"]
        + ["-p", "xdist.plugin", "-n", "2", "test_burn.py"],
        cwd=tmp_path,
        # Only xdist: every other installed plugin would cost each worker a second or more.
        env=clean_env(tmp_path, PYTHONPATH=str(ROOT), PYTEST_DISABLE_PLUGIN_AUTOLOAD="1"),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    line = next(x for x in proc.stdout.splitlines() if x.startswith("CPU time of the suite:"))
    seconds = float(re.search(r"= ([\d.]+) s", line).group(1))
    assert seconds >= 1.2, line  # both workers' burns, not only the controller's own time
    assert "2 workers" in line


def test_fix_hook_finds_the_scan_hook(tmp_path, monkeypatch):
    from migrate.cli.precommit import fix_hook_form

    monkeypatch.delenv("SKIP", raising=False)
    assert fix_hook_form(tmp_path) == "alone"  # no .pre-commit-config.yaml
    config = tmp_path / ".pre-commit-config.yaml"
    config.write_text("repos: [{repo: local, hooks: [{id: migrate-fix}]}]\n", encoding="utf-8")
    assert fix_hook_form(tmp_path) == "alone"
    config.write_text(
        "repos:\n- repo: local\n  hooks: [{id: migrate-fix}, {id: migrate-scan}]\n",
        encoding="utf-8",
    )
    assert fix_hook_form(tmp_path) == "with-scan"
    monkeypatch.setenv("SKIP", "other,migrate-scan")
    assert fix_hook_form(tmp_path) == "alone"  # skipped: the fix hook lists them itself
    config.write_text("repos: [\n", encoding="utf-8")
    assert fix_hook_form(tmp_path) == "alone"


GROUP = """\
import torch
from torch.utils.mobile_optimizer import optimize_for_mobile


def export(model, x):
    traced = torch.jit.trace(model, x)
    torch.jit.save(traced, "model.pt", _extra_files={"meta": "1"})
    mobile = optimize_for_mobile(traced)
    mobile._save_for_lite_interpreter("model.ptl")
    return traced
"""
CAUSE = "the result is returned (line 10); after the migration it is an ExportedProgram"


@pytest.mark.parametrize("command", [["scan", "--no-cache"], ["apply", "--dry-run"]])
def test_a_groups_shared_cause_is_printed_once_under_it(tmp_path, command):
    root = _repo(tmp_path, {"m.py": GROUP})
    run = run_cli([*command, "m.py"], root, clean_env(tmp_path))
    lines = run.stdout.splitlines()
    assert run.stdout.count(CAUSE) == 1, run.stdout
    members = [i for i, line in enumerate(lines) if re.search(r"\b[6-9]:\d+ MIG\d{3} ", line)]
    assert len(members) == 4, run.stdout
    # Under the last member, naming the four.
    assert lines[members[-1] + 1].strip().startswith(f"└ the 4 findings above: {CAUSE}")


def test_a_device_from_the_configuration_is_checked_before_torch_too(tmp_path):
    (tmp_path / "model.pt").write_bytes(b"PK\x05\x06" + b"\0" * 18)
    (tmp_path / "pyproject.toml").write_text(
        '[tool.migrate.verify]\ndevice = "gpu"\n', encoding="utf-8"
    )
    proc, modules = imported_modules(["verify", "model.pt", "--input-shape", "2x3"], tmp_path)
    assert proc.returncode == 2, proc.stderr
    [line] = error_lines(proc)
    assert "pyproject.toml [tool.migrate]: `verify.device` must be auto, cpu" in line, line
    assert not modules & HEAVY, sorted(modules & HEAVY)


def test_a_manifest_row_is_checked_before_torch_too(tmp_path):
    (tmp_path / "model.pt").write_bytes(b"PK\x05\x06" + b"\0" * 18)
    (tmp_path / "rows.jsonl").write_text(
        '{"archive": "model.pt", "input_shapes": "1x16"}\n'
        '{"archive": "model.pt", "input_shapes": "0x16"}\n',
        encoding="utf-8",
    )
    args = ["convert", "--manifest", "rows.jsonl", "-o", "out"]
    proc, modules = imported_modules(args, tmp_path)
    assert proc.returncode == 2, proc.stderr
    [line] = error_lines(proc)
    assert "rows.jsonl:2: --input-shape: malformed input spec '0x16': size 0" in line, line
    assert not modules & HEAVY, sorted(modules & HEAVY)
