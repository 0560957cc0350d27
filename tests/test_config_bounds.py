"""What a scanned repository's [tool.migrate] may make migrate do (issue 29): its `test`
command runs only when asked for on the command line, and its numbers are bounded. Flags
that name nothing (`--select ''`) are errors, not "every rule"."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from migrate.config import ConfigError, load_config
from migrate.report.apply_text import unprotected_note
from tests.test_config import migrate as run


def migrate(cwd: Path, *args: str):
    return run(*args, cwd=cwd)


TRACE = "import torch\n\n\ndef capture(model, x):\n    return torch.jit.trace(model, x)\n"
# A safe automatic fix (MIG111), so that apply has a unit to test.
FIXABLE = textwrap.dedent(
    """
    from typing import List

    import torch


    def collect(n: int) -> List[int]:
        out = torch.jit.annotate(List[int], [])
        for i in range(n):
            out.append(i)
        return out
    """
).lstrip()


# --------------------------------------------------------------------------- the test command


@pytest.fixture
def marked_repo(tmp_path: Path) -> tuple[Path, Path]:
    """A repository whose config's test command writes a marker outside it."""
    root, marker = tmp_path / "repo", tmp_path / "MARKER"
    root.mkdir()
    (root / "lib.py").write_text(FIXABLE)
    (root / "mark.py").write_text(f"open({str(marker)!r}, 'a').close()\n")
    (root / "pyproject.toml").write_text('[tool.migrate]\ntest = "python mark.py"\n')
    return root, marker


@pytest.mark.parametrize(("args", "code"), [(["--dry-run"], 1), ([], 0)], ids=["dry-run", "apply"])
def test_the_config_test_command_is_not_run_unless_asked_for(marked_repo, args, code):
    root, marker = marked_repo
    proc = migrate(root, "apply", *args, "lib.py")
    assert proc.returncode == code, proc.stdout + proc.stderr
    assert " 1 finding in 1 file." in proc.stdout  # there is a fix to test
    assert not marker.exists()
    assert "Tested with" not in proc.stdout
    config = root / "pyproject.toml"
    expected = f"note: {config} [tool.migrate] test not run (pass --test-from-config to run it)\n"
    if not args:  # a write outside version control ends with its note (docs/apply.md)
        expected += unprotected_note([str(root.resolve())], 1) + "\n"
    assert proc.stderr == expected


def test_test_from_config_prints_the_command_then_runs_it(marked_repo):
    root, marker = marked_repo
    proc = migrate(root, "apply", "--dry-run", "--test-from-config", "lib.py")
    assert proc.returncode == 1, proc.stdout + proc.stderr  # a dry run with a diff
    assert marker.exists()
    config = root / "pyproject.toml"
    first = proc.stderr.splitlines()[0]
    assert first == f"test: running `python mark.py` (from {config} [tool.migrate] test)"
    assert "Tested with `python mark.py`" in proc.stdout


def test_test_from_config_needs_a_command_and_excludes_test(marked_repo, tmp_path):
    root, marker = marked_repo
    proc = migrate(root, "apply", "--test-from-config", "--test", "true", "lib.py")
    assert (proc.returncode, proc.stderr) == (
        2,
        "error: give --test CMD or --test-from-config, not both\n",
    )
    (root / "pyproject.toml").write_text("[tool.migrate]\n")
    proc = migrate(root, "apply", "--test-from-config", "lib.py")
    assert (proc.returncode, proc.stderr) == (
        2,
        f"error: --test-from-config: no `test` in {root / 'pyproject.toml'} [tool.migrate]\n",
    )
    assert not marker.exists()


# --------------------------------------------------------------------------- numbers


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ("test-timeout = nan", "`test-timeout` must be a number of seconds above 0 and at most "
         "86400, not nan"),
        ("test-timeout = inf", "`test-timeout` must be a number of seconds above 0 and at most "
         "86400, not inf"),
        ("test-timeout = -5", "`test-timeout` must be a number of seconds above 0 and at most "
         "86400, not -5"),
        ("[tool.migrate.verify]\nsamples = 100000000",
         "`verify.samples` must be from 0 to 1000, not 100000000"),
        ("[tool.migrate.verify]\nsamples = -1", "`verify.samples` must be from 0 to 1000, not -1"),
        ("[tool.migrate.verify]\nseed = -1", "`verify.seed` must be from 0 to 4.29497e+09, not -1"),
        ("[tool.migrate.verify]\nrtol = nan", "`verify.rtol` must be from 0 to 1, not nan"),
        ("[tool.migrate.verify]\natol = inf", "`verify.atol` must be from 0 to 1e+06, not inf"),
        ("[tool.migrate.verify]\nrtol = 5", "`verify.rtol` must be from 0 to 1, not 5.0"),
        ("[tool.migrate.verify]\nsamples = 2.5", "`verify.samples` must be an int"),
        ('[tool.migrate.verify]\ndevice = "cuda; rm -rf /"',
         "`verify.device` must be auto, cpu, cuda[:N], mps or xpu[:N], not 'cuda; rm -rf /'"),
        ('max-file-size = "huge"',
         "`max-file-size` must be bytes or a size such as \"8 MiB\", not 'huge'"),
        ("max-file-size = 0", "`max-file-size` must be from 1 KiB to 256 MiB, not 0"),
        ("select = []", "`select` is empty; name rules or prefixes (MIG1)"),
        ('max-file-size = "2 GiB"', "`max-file-size` must be from 1 KiB to 256 MiB, not '2 GiB'"),
    ],
)  # fmt: skip
def test_numbers_from_the_file_are_bounded(tmp_path, table, message):
    path = tmp_path / "pyproject.toml"
    path.write_text(f"[tool.migrate]\n{table}\n")
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert str(caught.value) == f"{path} [tool.migrate]: {message}"


def test_numbers_within_bounds_are_kept(tmp_path):
    path = tmp_path / "pyproject.toml"
    path.write_text(
        '[tool.migrate]\ntest-timeout = 600\nmax-file-size = "512 KiB"\n'
        '[tool.migrate.verify]\nsamples = 1000\nseed = 7\nrtol = 1e-5\natol = 0\ndevice = "cuda:1"\n'
    )
    config = load_config(path)
    assert (config.test_timeout, config.max_file_size) == (600.0, 512 * 1024)
    assert config.verify == {
        "samples": 1000,
        "seed": 7,
        "rtol": 1e-5,
        "atol": 0.0,
        "device": "cuda:1",
    }


def test_a_bad_number_stops_the_scan_with_one_line(tmp_path):
    root = tmp_path / "repo"
    root.mkdir()
    (root / "model.py").write_text(TRACE)
    (root / "pyproject.toml").write_text("[tool.migrate]\ntest-timeout = nan\n")
    proc = migrate(root, "scan", ".")
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == (
        f"error: {root / 'pyproject.toml'} [tool.migrate]: `test-timeout` must be a number of "
        "seconds above 0 and at most 86400, not nan\n"
    )


def test_an_oversized_pyproject_is_not_read(tmp_path):
    path = tmp_path / "pyproject.toml"
    path.write_text("[tool.migrate]\n" + "# padding\n" * (1024 * 1024))
    with pytest.raises(ConfigError, match=r"larger than max-file-size \(\d+ bytes > 8 MiB\)"):
        load_config(path)


# --------------------------------------------------------------------------- flags


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["--select", ""], "error: --select: no rule given (name rules or prefixes: --select "
         "MIG1,MIG301)"),
        (["--select", " , "], "error: --select: no rule given (name rules or prefixes: --select "
         "MIG1,MIG301)"),
        (["--ignore", ""], "error: --ignore: no rule given (name rules or prefixes: --ignore "
         "MIG1,MIG301)"),
        (["--test-timeout", "nan"], "error: --test-timeout must be above 0 and at most 86400 "
         "seconds, not nan"),
        (["--test", " "], "error: --test: no command given (--test CMD, or --test-from-config)"),
        (["--jobs", "100000"], "error: --jobs must be at most 1024, not 100000"),
    ],
)  # fmt: skip
def test_flags_that_name_nothing_or_no_sane_number_are_errors(tmp_path, args, line):
    root = tmp_path / "repo"
    root.mkdir()
    (root / "model.py").write_text(TRACE)
    command = "apply" if args[0].startswith("--test") else "scan"
    if args[0] == "--test-timeout":
        args = [*args, "--test", "true"]
    if command == "apply":
        args = [*args, "--dry-run"]
    proc = migrate(root, command, *args, "model.py")
    assert (proc.returncode, proc.stderr) == (2, line + "\n")
