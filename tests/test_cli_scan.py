"""`migrate scan` options and exit codes, in-process (typer's CliRunner) and as a real
`python -m migrate` subprocess: both must agree."""

from __future__ import annotations

import os

import pytest

from tests.scan_support import invoke, run_cli, write_tree

TREE = {
    "src/model.py": """\
        import torch

        net = torch.jit.script(model)
        traced = torch.jit.trace(model, x)
        torch.jit.save(traced, "m.pt")
        """,
    "src/serve.py": """\
        import torch
        m = torch.jit.load("m.pt")
        """,
    "tests/test_model.py": """\
        import torch
        assert torch.jit.is_scripting() is False
        """,
    "gen/out_1.py": "import torch\nx = torch.jit.trace(m, x)\n",
    "clean.py": "import numba\nf = numba.jit(g)\n",
}


@pytest.fixture
def tree(tmp_path):
    return write_tree(tmp_path / "t", TREE)


def rules_of(run) -> list[tuple[str, int, str]]:
    return [(f["path"], f["line"], f["rule"]) for f in run.json()["findings"]]


@pytest.fixture(params=["subprocess", "in-process"])
def cli(request, tmp_path):
    def call(args, cwd):
        if request.param == "subprocess":
            return run_cli(args, cwd)
        return invoke(args, cwd, tmp_path)

    return call


def test_exit_codes(tree, cli):
    assert cli(["scan", "clean.py", "--no-cache"], tree).code == 0
    assert cli(["scan", ".", "--no-cache"], tree).code == 1
    assert cli(["scan", ".", "--exit-zero", "--no-cache"], tree).code == 0
    missing = cli(["scan", "nope", "--no-cache"], tree)
    assert missing.code == 2
    assert missing.stderr.strip() == "error: nope: no such file or directory"


def test_missing_path_does_not_stop_the_scan(tree, cli):
    run = cli(["scan", "nope.py", "src/serve.py", "-f", "json", "--no-cache"], tree)
    assert run.code == 2
    assert rules_of(run) == [("src/serve.py", 2, "MIG202")]
    assert run.json()["errors"] == [{"path": "nope.py", "message": "no such file or directory"}]
    # --exit-zero silences findings, never errors.
    again = cli(["scan", "nope.py", "src/serve.py", "--exit-zero", "--no-cache"], tree)
    assert again.code == 2


@pytest.mark.parametrize(
    "args, message",
    [
        (["--select", "MIG999"], "error: --select: unknown rule MIG999 (see `migrate rules`)"),
        (["--ignore", "XYZ"], "error: --ignore: unknown rule XYZ (see `migrate rules`)"),
        (["--format", "xml"], "error: --format must be one of text, json, sarif, github, not xml"),
    ],
)
def test_usage_errors_exit_2_with_one_line(tree, tmp_path, args, message):
    cli = lambda args, cwd: invoke(args, cwd, tmp_path)  # noqa: E731
    run = cli(["scan", ".", "--no-cache", *args], tree)
    assert run.code == 2
    assert run.stdout == ""
    assert run.stderr.strip() == message


def test_select_and_ignore_prefixes(tree, tmp_path):
    # In-process only: the option matrix; subprocess and CliRunner agree elsewhere.
    def cli(args, cwd):
        return invoke(args, cwd, tmp_path)

    def rules(*args):
        run = cli(["scan", "src", "-f", "json", "--no-cache", *args], tree)
        return sorted({r for _, _, r in rules_of(run)})

    assert rules() == ["MIG101", "MIG102", "MIG201", "MIG202"]
    assert rules("--select", "MIG2") == ["MIG201", "MIG202"]
    assert rules("--select", "MIG10") == ["MIG101", "MIG102"]
    assert rules("--select", "MIG101,MIG202") == ["MIG101", "MIG202"]
    assert rules("--select", "MIG101", "--select", "mig202") == ["MIG101", "MIG202"]
    assert rules("--ignore", "MIG1") == ["MIG201", "MIG202"]
    assert rules("--select", "MIG2", "--ignore", "MIG202") == ["MIG201"]
    run = cli(["scan", "src", "--ignore", "MIG", "--no-cache"], tree)
    assert run.code == 0


def test_exclude_globs(tree, tmp_path):
    def cli(args, cwd):
        return invoke(args, cwd, tmp_path)

    def paths(*args):
        run = cli(["scan", ".", "-f", "json", "--no-cache", *args], tree)
        return sorted({p for p, _, _ in rules_of(run)})

    everything = ["gen/out_1.py", "src/model.py", "src/serve.py", "tests/test_model.py"]
    assert paths() == everything
    assert paths("--exclude", "tests") == [p for p in everything if not p.startswith("tests")]
    assert paths("--exclude", "gen/*") == [p for p in everything if not p.startswith("gen")]
    assert paths("--exclude", "out_*.py", "--exclude", "test_*.py") == [
        "src/model.py",
        "src/serve.py",
    ]
    assert paths("--exclude", "src/serve.py") == [p for p in everything if p != "src/serve.py"]
    assert paths("--exclude", "**/model.py") == [p for p in everything if p != "src/model.py"]


def test_exclude_applies_to_named_files_and_to_paths_as_typed(tree, tmp_path):
    # pre-commit passes file names: an --exclude that matches them must still hold, and a
    # glob typed relative to the current folder works while scanning a subfolder.
    def paths(*args):
        run = invoke([*args, "-f", "json", "--no-cache"], tree, tmp_path)
        return sorted({p for p, _, _ in rules_of(run)})

    named = ["scan", "src/model.py", "src/serve.py", "gen/out_1.py"]
    assert paths(*named) == ["gen/out_1.py", "src/model.py", "src/serve.py"]
    assert paths(*named, "--exclude", "gen/*") == ["src/model.py", "src/serve.py"]
    assert paths(*named, "--exclude", "src/serve.py") == ["gen/out_1.py", "src/model.py"]
    assert paths(*named, "--exclude", "gen") == ["src/model.py", "src/serve.py"]
    assert paths("scan", "src", "--exclude", "src/serve.py") == ["src/model.py"]
    assert paths("scan", "src", "--exclude", "serve.py") == ["src/model.py"]


SUPPRESS = """\
import torch

a = torch.jit.script(m)  # migrate: ignore
b = torch.jit.trace(m, x)  # migrate: ignore[MIG101]
c = torch.jit.trace(m, x)  # migrate: ignore[MIG102, MIG201]
d = torch.jit.trace(  # migrate: ignore[MIG102]
    m,
    x,
)
e = torch.jit.trace(
    m,
    x,
)  # migrate: ignore
f = torch.jit.trace(
    m,
    x,  # not on the first or last line: does not count
)
torch.jit.save(  # migrate: ignore[MIG2]
    m, "x")
g = torch.jit.load("x")  #migrate:ignore[mig202]
h = torch.jit.load("x")  # noqa
s = "# migrate: ignore"; torch.jit.freeze(m)
t = torch.jit.freeze(torch.jit.script(m))  # migrate: ignore[MIG116]
"""


def test_suppression_comments(tmp_path, cli):
    write_tree(tmp_path, {"s.py": SUPPRESS})
    run = cli(["scan", "s.py", "-f", "json", "--no-cache"], tmp_path)
    assert [(line, rule) for _, line, rule in rules_of(run)] == [
        (4, "MIG102"),  # ignore[MIG101] does not cover MIG102
        (14, "MIG102"),
        (21, "MIG202"),  # noqa is not ours
        (22, "MIG116"),  # the marker is inside a string, not a comment
        (23, "MIG101"),  # only MIG116 was named
    ]


def test_suppression_in_text_output_counts(tmp_path):
    cli = lambda args, cwd: invoke(args, cwd, tmp_path)  # noqa: E731
    write_tree(tmp_path, {"s.py": "import torch\ntorch.jit.script(m)  # migrate: ignore\n"})
    run = cli(["scan", "s.py", "--no-cache"], tmp_path)
    assert run.code == 0
    assert run.stdout.startswith("No TorchScript or CUDA 12.8 findings in 1 file.")


def test_output_file(tree, tmp_path):
    cli = lambda args, cwd: invoke(args, cwd, tmp_path)  # noqa: E731
    target = tmp_path / "out" / "scan.json"
    target.parent.mkdir()
    run = cli(["scan", "src", "-f", "json", "-o", str(target), "--no-cache"], tree)
    assert run.code == 1 and run.stdout == ""
    assert '"rule": "MIG202"' in target.read_text()
    bad = cli(["scan", "src", "-o", str(tmp_path / "no" / "such" / "dir.txt"), "--no-cache"], tree)
    assert bad.code == 2
    assert bad.stderr.strip().startswith("error: --output ")
    assert "Traceback" not in bad.stderr


def test_a_single_file_and_a_folder_together_are_deduplicated(tree, tmp_path):
    cli = lambda args, cwd: invoke(args, cwd, tmp_path)  # noqa: E731
    run = cli(["scan", "src", "src/model.py", "./src/serve.py", "-f", "json", "--no-cache"], tree)
    assert rules_of(run) == [
        ("src/model.py", 3, "MIG101"),
        ("src/model.py", 4, "MIG102"),
        ("src/model.py", 5, "MIG201"),
        ("src/serve.py", 2, "MIG202"),
    ]


def test_python_dash_m_and_console_script_agree(tree):
    import shutil
    import subprocess

    from tests.scan_support import clean_env

    exe = shutil.which("migrate")
    if exe is None:
        pytest.skip("the console script is not installed")
    proc = subprocess.run(
        [exe, "scan", "src", "-f", "json", "--no-cache"],
        cwd=tree,
        env=clean_env(tree),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 1
    assert proc.stdout == run_cli(["scan", "src", "-f", "json", "--no-cache"], tree).stdout


def test_a_symlink_to_a_missing_file_is_skipped_with_a_note(tmp_path):
    (tmp_path / "m.py").write_text("import torch\n\nm = torch.jit.script(f)\n")
    (tmp_path / "docs").mkdir()
    os.symlink("../absent/README.md", tmp_path / "docs" / "README.md")
    run = run_cli(["scan", ".", "--no-cache"], cwd=tmp_path)
    assert run.code == 1, run.stdout + run.stderr  # findings, not an error
    assert "docs/README.md: a symlink to a missing file; skipped" in run.stdout + run.stderr
    assert "error:" not in run.stdout + run.stderr
