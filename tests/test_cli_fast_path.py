"""`migrate scan PATH...` (what the pre-commit hook runs) skips typer, parsing and import:
it must mean exactly what typer would make of the same words, and only those words."""

from __future__ import annotations

import subprocess
import sys

import pytest
import typer

from migrate.cli import commands as cli
from migrate.cli import entry
from tests.scan_support import invoke, run_cli, write_tree

TREE = {
    "src/model.py": "import torch\nnet = torch.jit.script(model)\n",
    "src/serve.py": "import torch\nm = torch.jit.load('m.pt')\n",
    "clean.py": "import numba\nf = numba.jit(g)\n",
    "broken.py": "import torch\ndef f(:\n    torch.jit.script(g)\n",
}


def test_the_switch_table_is_the_commands_value_less_flags():
    command = typer.main.get_command(cli.app).commands["scan"]
    flags = {
        opt: param.name
        for param in command.params
        if getattr(param, "is_flag", False) and not param.secondary_opts
        for opt in param.opts
        if opt not in ("-h", "--help")
    }
    assert flags == entry.PLAIN_SCAN_FLAGS


@pytest.mark.parametrize(
    "argv, expected",
    [
        (["scan", "a.py"], (["a.py"], {})),
        (["scan", "a.py", "--no-cache", "b/"], (["a.py", "b/"], {"no_cache": True})),
        (
            ["scan", "--exit-zero", "--isolated", "a.py"],
            (["a.py"], {"exit_zero": True, "isolated": True}),
        ),
        (["scan"], None),
        (["scan", "--no-cache"], None),  # no path: typer says what is missing
        (["scan", "a.py", "--format", "json"], None),
        (["scan", "a.py", "-j", "2"], None),
        (["scan", "--", "-odd.py"], None),
        (["scan", "-"], None),
        (["scan", "a.py", "--help"], None),
        (["apply", "a.py"], None),
        ([], None),
    ],
)
def test_which_command_lines_take_the_short_way(argv, expected):
    assert entry.plain_scan(argv) == expected


@pytest.mark.parametrize(
    "args",
    [
        ["scan", "src/model.py"],
        ["scan", "clean.py"],
        ["scan", "src", "clean.py", "--no-cache"],
        ["scan", "--exit-zero", "src/serve.py"],
        ["scan", "nope.py", "src/serve.py"],
        ["scan", "broken.py", "--isolated"],
        ["scan", "."],
    ],
)
def test_the_short_way_prints_and_exits_as_typer_does(tmp_path, args):
    tree = write_tree(tmp_path / "t", TREE)
    short = run_cli(args, tree)  # a real process: main() takes the short way
    typer_run = invoke(args, tree, tmp_path)  # typer's runner: always the full parse
    assert (short.code, short.stdout, short.stderr) == (
        typer_run.code,
        typer_run.stdout,
        typer_run.stderr,
    )
    assert short.code in (0, 1, 2)


def test_main_does_not_reach_typer_for_a_plain_scan(tmp_path, monkeypatch, capsys):
    tree = write_tree(tmp_path / "t", TREE)
    monkeypatch.chdir(tree)
    monkeypatch.setenv("MIGRATE_CACHE_DIR", str(tmp_path / "cache"))

    def no_typer():
        raise AssertionError("typer parsed a plain scan")

    monkeypatch.setattr(cli, "app", no_typer)
    monkeypatch.setattr(sys, "argv", ["migrate", "scan", "src/model.py", "--no-cache"])
    with pytest.raises(SystemExit) as exit_:
        entry.main()
    assert exit_.value.code == cli.EXIT_FINDINGS
    assert "MIG" in capsys.readouterr().out
    # An option with a value is typer's to read.
    monkeypatch.setattr(sys, "argv", ["migrate", "scan", "src/model.py", "-f", "json"])
    with pytest.raises(AssertionError, match="typer parsed"):
        entry.main()


def test_a_plain_scan_imports_neither_typer_nor_click(tmp_path):
    tree = write_tree(tmp_path / "t", TREE)
    code = (
        "import sys\n"
        "sys.argv = ['migrate', 'scan', 'src/model.py', 'clean.py', '--no-cache']\n"
        "from migrate.cli.entry import main\n"
        "try:\n"
        "    main()\n"
        "except SystemExit as exit_:\n"
        "    loaded = sorted({m.split('.')[0] for m in sys.modules} & {'typer', 'click'})\n"
        "    print(exit_.code, loaded, file=sys.stderr)\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", code], cwd=tree, capture_output=True, text=True, check=True
    )
    assert run.stderr.splitlines()[-1] == "1 []"
    assert "MIG101" in run.stdout
