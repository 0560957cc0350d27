"""Bad input: one clear `error: <path>: <cause>` line per input, the scan goes on, exit 2,
and no traceback unless --debug."""

from __future__ import annotations

import os
import sys

import pytest

from tests.scan_support import invoke, run_cli, write_tree

GOOD = "import torch\nnet = torch.jit.script(model)\n"

BAD = {
    "syntax.py": "import torch\ndef f(:\n    torch.jit.script(f)\n",
    "py2.py": 'import torch\nprint "torch.jit"\n',
    "latin1.py": b'import torch\nname = "caf\xe9"\ntorch.jit.script(f)\n',
    "binary.py": b"\x7fELF\x02\x01\x01\x00\x00jit\x00\x00\xff\xfe",
    "cookie.py": "# -*- coding: klingon -*-\nimport torch\ntorch.jit.script(f)\n",
    "late_nul.py": b"import torch\ntorch.jit.script(f)\n" + b"#" * 9000 + b"\x00\n",
}

CAUSES = {
    "syntax.py": "cannot parse (line 2): invalid syntax",
    "py2.py": "cannot parse (line 2): Python 2 syntax is not supported",
    "latin1.py": "cannot decode: not valid utf-8 text",
    "binary.py": "cannot decode: file looks binary (NUL bytes)",
    "cookie.py": "cannot read: unknown encoding: klingon",
    "self.py": "cannot read: too many levels of symbolic links",
}


@pytest.fixture
def tree(tmp_path):
    root = write_tree(tmp_path / "t", {"good.py": GOOD, "pkg/also_good.py": GOOD, **BAD})
    os.symlink("self.py", root / "self.py")  # a symlink pointing to itself
    os.symlink("..", root / "pkg" / "up")  # a folder symlink cycle: pkg/up -> .
    os.symlink("../pkg", root / "pkg" / "again")
    return root


def test_each_bad_input_is_one_line_and_the_scan_goes_on(tree):
    run = run_cli(["scan", ".", "--format", "json", "--no-cache"], cwd=tree)
    assert run.code == 2
    doc = run.json()
    # The good files are still reported, once each (the symlink cycles are not followed).
    assert [(f["path"], f["line"], f["rule"]) for f in doc["findings"]] == [
        ("good.py", 2, "MIG101"),
        ("pkg/also_good.py", 2, "MIG101"),
    ]
    errors = {e["path"]: e["message"] for e in doc["errors"]}
    assert set(errors) == set(CAUSES) | {"late_nul.py"}
    for path, cause in CAUSES.items():
        assert errors[path] == cause, path
    assert errors["late_nul.py"].startswith("cannot parse")
    assert "null bytes" in errors["late_nul.py"]
    # stderr: exactly one line per error, and nothing else.
    lines = run.stderr.splitlines()
    assert sorted(lines) == sorted(f"error: {p}: {m}" for p, m in errors.items())
    assert "Traceback" not in run.stderr


def test_text_format_puts_errors_on_stderr_only(tree):
    run = run_cli(["scan", ".", "--no-cache"], cwd=tree)
    assert run.code == 2
    assert "error:" not in run.stdout
    assert "7 files could not be analysed (see the error lines)." in run.stdout
    assert len(run.stderr.splitlines()) == 7


def test_files_without_torchscript_text_are_not_parsed(tmp_path):
    # The pre-filter decides first: a Python 2 file that cannot hold a finding costs nothing
    # and is no error.
    write_tree(tmp_path, {"old.py": 'print "hello"\n', "good.py": GOOD})
    run = run_cli(["scan", ".", "-f", "json", "--no-cache"], cwd=tmp_path)
    assert run.code == 1 and run.json()["errors"] == []


@pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root can read a chmod 000 file"
)
def test_unreadable_file(tmp_path):
    write_tree(tmp_path, {"secret.py": GOOD, "good.py": GOOD})
    (tmp_path / "secret.py").chmod(0)
    try:
        run = run_cli(["scan", ".", "-f", "json", "--no-cache"], cwd=tmp_path)
    finally:
        (tmp_path / "secret.py").chmod(0o644)
    assert run.code == 2
    assert run.json()["errors"] == [
        {"path": "secret.py", "message": "cannot read: permission denied"}
    ]
    assert [f["path"] for f in run.json()["findings"]] == ["good.py"]


def test_huge_and_deeply_nested_files(tmp_path):
    # ~700 kB, 30k lines, the finding at the very end (a rule whose check is cheap: the
    # point is the file's size, not the cost of one rewrite).
    body = "".join(f"value_{i} = {i} * 2\n" for i in range(30_000))
    chain = " + ".join(["x"] * 2_000)  # parses fine; nests 2,000 deep
    write_tree(
        tmp_path,
        {
            "huge.py": "import torch\n" + body + "torch.jit._state.disable()\n",
            "chain.py": f"import torch\ny = {chain}\nnet = torch.jit.script(m)\n",
        },
    )
    run = invoke(["scan", ".", "-f", "json", "--no-cache"], cwd=tmp_path)
    assert run.code == 1, run.stderr
    assert [(f["path"], f["line"], f["rule"]) for f in run.json()["findings"]] == [
        ("chain.py", 3, "MIG101"),
        ("huge.py", 30_002, "MIG119"),
    ]


@pytest.mark.slow  # one scan of the 1,500-link chain costs ~14 s of CPU (the scan's own cost)
def test_a_long_attribute_chain_is_analysed_and_its_file_keeps_its_findings(tmp_path):
    # 1,500 links: past Python's default recursion limit, within the scan's raised one. Every
    # step of a file's analysis (the fix planner's hints too) must run under that limit.
    chain = "torch" + ".b" * 1_500
    text = f"import torch  # jit\nnet = {chain}.script(m)\nreal = torch.jit.script(m)\n"
    write_tree(tmp_path, {"chain.py": text})
    run = invoke(["scan", ".", "-f", "json", "--no-cache"], cwd=tmp_path)
    assert run.json()["errors"] == []
    assert [(f["line"], f["rule"]) for f in run.json()["findings"]] == [(3, "MIG101")]


def test_a_named_file_with_a_long_chain_and_nothing_hot_is_read_without_a_crash(tmp_path):
    # The pre-commit form: a file named alone, skipped by the pre-filter, whose imports the
    # scan still reads (for re-exports) outside the per-file analysis and its raised limit.
    write_tree(tmp_path, {"chain.py": "import torch\nx = torch" + ".a" * 1_000 + "\n"})
    run = invoke(["scan", "chain.py", "-f", "json", "--no-cache"], cwd=tmp_path)
    assert run.code == 0, run.stdout + run.stderr
    assert run.json()["errors"] == [] and run.json()["findings"] == []


def test_too_deep_to_analyse_is_an_error_record(tmp_path):
    chain = " + ".join(["x"] * 60_000)
    deep = f"import torch\ny = {chain}\nnet = torch.jit.script(m)\n"
    write_tree(tmp_path, {"deep.py": deep, "good.py": GOOD})
    run = invoke(["scan", ".", "-f", "json", "--no-cache"], cwd=tmp_path)
    assert run.code == 2
    (error,) = run.json()["errors"]
    assert error["path"] == "deep.py"
    assert error["message"] in (
        "cannot parse: expressions nested too deeply",
        "cannot analyse: expressions nested too deeply",
    ) or error["message"].startswith("cannot parse (line 2): ")
    assert [f["path"] for f in run.json()["findings"]] == ["good.py"]
    assert sys.getrecursionlimit() < 20_000  # the raised limit does not leak


def test_a_crashing_check_is_one_error_line_and_raises_with_debug(tmp_path, monkeypatch):
    from migrate.checks.mig202_jit_load import JitLoadToExportLoad

    def boom(self, ref, ctx):
        raise RuntimeError("check exploded")

    monkeypatch.setattr(JitLoadToExportLoad, "on_reference", boom)
    write_tree(tmp_path, {"bad.py": "import torch\ntorch.jit.load('m')\n", "good.py": GOOD})
    run = invoke(["scan", ".", "-f", "json", "--no-cache"], cwd=tmp_path)
    assert run.code == 2
    assert run.json()["errors"] == [
        {
            "path": "bad.py",
            "message": "internal error: RuntimeError: check exploded "
            "(rerun with --debug for the traceback)",
        }
    ]
    assert [f["path"] for f in run.json()["findings"]] == ["good.py"]
    assert "Traceback" not in run.stderr
    with pytest.raises(RuntimeError, match="check exploded"):
        invoke(["scan", ".", "--no-cache", "--debug"], cwd=tmp_path)
    assert "MIGRATE_DEBUG" not in os.environ


def test_bom_crlf_and_non_ascii_columns(tmp_path):
    write_tree(
        tmp_path,
        {
            "bom.py": b"\xef\xbb\xbfimport torch\ntorch.jit.script(m)\n",
            "crlf.py": b"import torch\r\n\r\nnet = torch.jit.script(m)\r\n",
            "uni.py": 'import torch\nname = "modèle"; torch.jit.trace(m, x)\n',
            "empty.py": "",
        },
    )
    run = invoke(["scan", ".", "-f", "json", "--no-cache"], cwd=tmp_path)
    got = [(f["path"], f["line"], f["column"], f["end_column"]) for f in run.json()["findings"]]
    assert got == [
        ("bom.py", 2, 1, 20),
        ("crlf.py", 3, 7, 26),
        ("uni.py", 2, 18, 39),  # characters, not UTF-8 bytes
    ]
