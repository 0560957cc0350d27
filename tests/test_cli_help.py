"""`--help` names what to type (issue 15): `--select CODES`, `PATHS...`, flags with no
placeholder, never a Python type, and options' help readable at 80 columns."""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from migrate.cli.commands import app
from tests.scan_support import clean_env, run_cli

COMMANDS = ["scan", "apply", "report", "rules", "explain", "docs", "demo", "verify", "convert"]

# What typer prints for a parameter without a placeholder: <bool>, <list[str]>, {paths}.
PYTHON_TYPE = re.compile(r"<(bool|str|int|float|path|list\[[a-z]+\])>|\{[a-z_]+\}")


def help_text(command: str) -> str:
    result = CliRunner().invoke(app, [command, "--help"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    return result.output


def option_lines(text: str) -> list[str]:
    """The lines of the Options section."""
    lines = text.split("\nOptions:\n", 1)[1].splitlines()
    return [line for line in lines if line.strip()]


@pytest.mark.parametrize("command", COMMANDS)
def test_no_python_types_and_80_columns(command):
    text = help_text(command)
    assert PYTHON_TYPE.search(text) is None, text
    assert max(len(line) for line in text.splitlines()) <= 80, text
    # Every option's help starts within the left half: none is squeezed into a strip.
    starts = [
        m.start(2) for m in map(re.compile(r"^(  -.*?  +)(\S)").match, option_lines(text)) if m
    ]
    assert starts and max(starts) <= 40, text


def test_scan_placeholders():
    text = help_text("scan")
    assert "scan [OPTIONS] PATHS..." in text
    assert re.search(r"^  PATHS\.\.\.  +Files or folders to look at\.", text, re.M)
    assert re.search(r"^  --select CODES  +Only these rules", text, re.M)
    assert re.search(r"^  --ignore CODES  +Skip", text, re.M)
    assert re.search(r"^  -j, --jobs N  +Worker processes", text, re.M)
    # A flag takes no value, so it shows none.
    assert re.search(r"^  --exit-zero  +Exit 0 even when there are findings\.", text, re.M)


def test_apply_flags_show_no_value():
    text = help_text("apply")
    assert re.search(r"^  --dry-run, --diff  +Print the diff", text, re.M)
    assert re.search(r"^  --allow-dirty  +Also rewrite", text, re.M)
    assert re.search(r"^  --out DIR  +Write the migrated copy", text, re.M)


def test_scan_help_in_a_real_80_column_terminal(tmp_path):
    run = run_cli(["scan", "--help"], tmp_path, clean_env(tmp_path, COLUMNS="80"))
    assert run.code == 0
    assert "scan [OPTIONS] PATHS..." in run.stdout
    assert "--exit-zero <bool>" not in run.stdout and "╭" not in run.stdout
    assert all(len(line) <= 80 for line in run.stdout.splitlines())


def test_a_flag_given_a_value_reads_the_value_as_a_path(tmp_path):
    (tmp_path / "m.py").write_text("x = 1\n")
    run = run_cli(["scan", "--exit-zero", "true", "m.py"], tmp_path)
    assert run.code == 2
    assert run.stderr.strip() == "error: true: no such file or directory"


def _flat(text: str) -> str:
    """The help as one line, a word wrapped at its hyphen (`keep-` / `scriptable`) joined."""
    return " ".join(re.sub(r"(\w)-\n\s+", r"\1-", text).split())


@pytest.mark.parametrize("command", ["scan", "apply", "report"])
def test_help_says_what_happens_without_intent_and_what_j_defaults_to(command):
    flat = _flat(help_text(command))
    intent = flat.split("--intent INTENT", 1)[1].split(" --", 1)[0]
    assert "keep-scriptable" in intent and "each site is decided alone" in intent, intent
    jobs = flat.split("-j, --jobs N", 1)[1].split(" --", 1)[0]
    assert "Default (and 0): one per CPU" in jobs, jobs


def test_the_jobs_help_names_the_engines_threshold():
    from migrate.scan.engine import POOL_AFTER_BYTES

    kilobytes = POOL_AFTER_BYTES // 1000
    assert POOL_AFTER_BYTES == kilobytes * 1000
    assert f"only after {kilobytes} kB of parsed source" in _flat(help_text("scan"))


def test_every_apply_option_the_docs_use_is_in_help():
    """README.md, docs/*.md and the pre-commit hooks show `migrate apply` lines; each option
    they pass is one `apply --help` lists (`--pre-commit` was hidden once)."""
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    texts = [root / "README.md", root / ".pre-commit-hooks.yaml", *sorted(root.glob("docs/*.md"))]
    listed = set(re.findall(r"--[a-z][a-z-]+", help_text("apply")))
    used = {
        option
        for path in texts
        for line in re.findall(r"migrate apply[^\n`|]*", path.read_text(encoding="utf-8"))
        for option in re.findall(r"(?<![\w-])--[a-z][a-z-]+", line.split(" -- ")[0])
    }
    assert "--pre-commit" in used
    assert used <= listed, sorted(used - listed)
