"""[tool.migrate] configuration: discovery, precedence over flags, and its errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from migrate.config import FORMATS, ConfigError, find_pyproject, load_config, resolve_config

SOURCE = (
    "import torch\n\n\n"
    "def f(model, x):\n"
    "    if torch.jit.is_scripting():\n"  # MIG110
    "        return x\n"
    "    return torch.jit.trace(model, x)\n"  # MIG102
)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def migrate(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "FORCE_COLOR")}
    return subprocess.run(
        [sys.executable, "-m", "migrate", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def rules_found(proc: subprocess.CompletedProcess) -> list[tuple[str, str]]:
    return sorted((f["path"], f["rule"]) for f in json.loads(proc.stdout)["findings"])


@pytest.fixture
def project(tmp_path: Path) -> Path:
    write(tmp_path / "src" / "pkg" / "model.py", SOURCE)
    write(tmp_path / "src" / "legacy" / "old.py", SOURCE)
    write(tmp_path / "tests" / "test_model.py", SOURCE)
    return tmp_path


def test_no_config_finds_everything(project):
    proc = migrate("scan", ".", "--format", "json", cwd=project)
    assert proc.returncode == 1, proc.stderr
    assert len(rules_found(proc)) == 6


def test_config_select_exclude_per_file_ignores(project):
    write(
        project / "pyproject.toml",
        "[project]\nname = 'x'\n\n[tool.migrate]\n"
        'select = ["MIG1"]\n'
        'exclude = ["src/legacy"]\n'
        '[tool.migrate.per-file-ignores]\n"tests/*" = ["MIG102"]\n',
    )
    proc = migrate("scan", ".", "--format", "json", cwd=project)
    assert proc.returncode == 1, proc.stderr
    assert rules_found(proc) == [
        ("src/pkg/model.py", "MIG102"),
        ("src/pkg/model.py", "MIG110"),
        ("tests/test_model.py", "MIG110"),
    ]


def test_anchored_exclude_is_relative_to_the_pyproject_folder(project):
    """`src/legacy` excludes that folder when scanning from a subfolder or a single file too."""
    write(project / "pyproject.toml", '[tool.migrate]\nexclude = ["src/legacy"]\n')
    proc = migrate("scan", "legacy", "pkg", "--format", "json", cwd=project / "src")
    assert {p for p, _ in rules_found(proc)} == {"pkg/model.py"}
    proc = migrate("scan", "src/legacy/old.py", "--format", "json", cwd=project)
    assert proc.returncode == 0, proc.stdout
    assert rules_found(proc) == []


def test_config_format_is_the_default_and_the_flag_wins(project):
    write(project / "pyproject.toml", '[tool.migrate]\nformat = "json"\n')
    proc = migrate("scan", "src/pkg", cwd=project)
    assert len(json.loads(proc.stdout)["findings"]) == 2
    proc = migrate("scan", "src/pkg", "--format", "text", cwd=project)
    assert proc.stdout.startswith("src/pkg/model.py\n")


def test_flags_win_over_the_file(project):
    write(project / "pyproject.toml", '[tool.migrate]\nselect = ["MIG110"]\n')
    proc = migrate("scan", "src/pkg", "--format", "json", cwd=project)
    assert [r for _, r in rules_found(proc)] == ["MIG110"]
    # --select replaces the file's select ...
    proc = migrate("scan", "src/pkg", "--format", "json", "--select", "MIG102", cwd=project)
    assert [r for _, r in rules_found(proc)] == ["MIG102"]
    # ... --isolated ignores the file ...
    proc = migrate("scan", "src/pkg", "--format", "json", "--isolated", cwd=project)
    assert [r for _, r in rules_found(proc)] == ["MIG102", "MIG110"]
    # ... and --ignore adds to the file's ignore list.
    # (MIG120 is the catch-all for torch.jit names whose own rule is off.)
    write(project / "pyproject.toml", '[tool.migrate]\nignore = ["MIG110", "MIG120"]\n')
    proc = migrate("scan", "src/pkg", "--format", "json", "--ignore", "MIG102", cwd=project)
    assert proc.returncode == 0
    assert rules_found(proc) == []


def test_cuda_flag_wins_over_the_file(project):
    write(project / "pyproject.toml", '[tool.migrate]\ncuda = "13.2"\n')
    assert resolve_config([str(project / "src")], None, False).cuda == "13.2"
    from migrate.cli.commands import build_options

    options, _ = build_options([str(project)], cuda="13.0")
    assert options.cuda == "13.0"
    options, _ = build_options([str(project)])
    assert options.cuda == "13.2"


def test_walks_up_from_the_given_path_to_the_closest_table(tmp_path):
    write(tmp_path / "pyproject.toml", '[tool.migrate]\nselect = ["MIG2"]\n')
    # A nearer pyproject.toml without [tool.migrate] does not stop the walk (ruff does the same).
    write(tmp_path / "sub" / "pyproject.toml", "[project]\nname = 'sub'\n")
    write(tmp_path / "sub" / "deeper" / "a.py", SOURCE)
    assert (
        find_pyproject([str(tmp_path / "sub" / "deeper" / "a.py")])
        == (tmp_path / "pyproject.toml").resolve()
    )
    assert (
        find_pyproject([str(tmp_path / "sub" / "deeper")])
        == (tmp_path / "pyproject.toml").resolve()
    )
    write(tmp_path / "sub" / "pyproject.toml", '[tool.migrate]\nselect = ["MIG110"]\n')
    config = resolve_config([str(tmp_path / "sub" / "deeper")], None, False)
    assert config.select == ["MIG110"]
    assert config.path == (tmp_path / "sub" / "pyproject.toml").resolve()
    # The walk starts at the given path, not at the working directory.
    proc = migrate(
        "scan", str(tmp_path / "sub" / "deeper"), "--format", "json", cwd=tmp_path.parent
    )
    assert [r for _, r in rules_found(proc)] == ["MIG110"]


def test_explicit_config_file(tmp_path):
    cfg = write(tmp_path / "elsewhere.toml", '[tool.migrate]\nselect = ["MIG102"]\n')
    write(tmp_path / "code" / "a.py", SOURCE)
    proc = migrate("scan", "code", "--config", str(cfg), "--format", "json", cwd=tmp_path)
    assert [r for _, r in rules_found(proc)] == ["MIG102"]
    proc = migrate("scan", "code", "--config", "missing.toml", cwd=tmp_path)
    assert proc.returncode == 2
    assert "missing.toml: no such config file" in proc.stderr


def test_verify_table(tmp_path):
    path = write(
        tmp_path / "pyproject.toml",
        '[tool.migrate.verify]\nrtol = 1e-4\natol = 0\nsamples = 5\nseed = 7\ndevice = "cpu"\n',
    )
    assert load_config(path).verify == {
        "rtol": 1e-4,
        "atol": 0.0,
        "samples": 5,
        "seed": 7,
        "device": "cpu",
    }


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ('selct = ["MIG1"]', "unknown key `selct`"),
        ('select = "MIG1"', "`select` must be a list of strings"),
        ("ignore = [101]", "`ignore` must be a list of strings"),
        ('select = ["MIG999"]', "`select` names unknown rule MIG999"),
        ('exclude = "build"', "`exclude` must be a list of strings"),
        ('per-file-ignores = ["MIG101"]', "`per-file-ignores` must be a table"),
        ('per-file-ignores = {"a.py" = "MIG101"}', "`per-file-ignores.a.py` must be a list"),
        ('per-file-ignores = {"a.py" = ["XYZ"]}', "`per-file-ignores.a.py` names unknown rule XYZ"),
        ("cuda = 13.0", '`cuda` must be a string ("13.0" or "13.2"), not float'),
        ('cuda = "12.8"', '`cuda` must be "13.0" or "13.2", not \'12.8\''),
        ('format = "xml"', "`format` must be one of text, json, sarif, github, not 'xml'"),
        ("format = 1", "`format` must be one of"),
        ("verify = 1", "`verify` must be a table"),
        ("verify = {rtol = 'small'}", "`verify.rtol` must be a float"),
        ("verify = {samples = 2.5}", "`verify.samples` must be an int"),
        ("verify = {samples = true}", "`verify.samples` must be an int"),
        ("verify = {tolerance = 1}", "unknown key `verify.tolerance`"),
    ],
)
def test_errors_name_the_key(tmp_path, table, message):
    path = write(tmp_path / "pyproject.toml", f"[tool.migrate]\n{table}\n")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert message in str(info.value)
    assert str(path) in str(info.value)


def test_errors_reach_the_command_line_with_exit_2(project):
    write(project / "pyproject.toml", '[tool.migrate]\nselect = ["MIG1"]\nfromat = "json"\n')
    for command in ("scan", "apply", "report"):
        proc = migrate(command, "src", cwd=project)
        assert proc.returncode == 2, (command, proc.stdout, proc.stderr)
        assert "[tool.migrate]: unknown key `fromat`" in proc.stderr
        assert "Traceback" not in proc.stderr


def test_broken_toml_with_our_table_is_an_error(project):
    write(project / "pyproject.toml", '[tool.migrate]\nselect = ["MIG1"\n')
    proc = migrate("scan", "src", cwd=project)
    assert proc.returncode == 2
    assert "invalid TOML" in proc.stderr
    # A broken pyproject.toml that is not ours is skipped on the way up.
    write(project / "pyproject.toml", "[project\n")
    assert find_pyproject([str(project / "src")]) is None


def test_config_formats_match_the_reporters():
    from migrate.report import FORMATS as REPORTERS

    assert set(FORMATS) == set(REPORTERS)
