"""MIG121 under `--intent drop` (issue 27 item 7): a repository's public TorchScript wrappers
move to torch.export together, keeping their names and parameters; each call that must now
pass example inputs gets the ones the program calls the module with, and is written, tested
and reverted with the wrappers (one fix unit across files). Golden before/after texts, run
through the CLI; no torch needed (apply does not import it)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.scan_support import run_cli

UTILS = """\
import torch


def convert(model, path=None, inputs=None):
    script = torch.jit.script(model)
    if path is not None:
        torch.jit.save(script, path, {"meta": "1"})
    for x in inputs or ():
        script(x)
    return script


def load(path, map_location=None):
    return torch.jit.load(path, map_location)


def convert_and_save(model, path, inputs=None):
    convert(model, path, inputs=inputs)
"""

USE = """\
import torch

from pkg.utils import convert, convert_and_save, load

PATH = "net.pt"


def main(x):
    convert(torch.nn.Linear(8, 3), PATH)
    net = load(PATH)
    return net(x)


def again():
    convert_and_save(torch.nn.Linear(8, 3), "again.pt")
    net = load("again.pt")
    return net(torch.randn(5, 8))
"""

RUN = """\
import torch

from pkg.use import again, main

print(main(torch.ones(3, 8)).shape, again().shape)
"""

UTILS_AFTER = """\
import torch


def convert(model, path=None, inputs=None):
    if not inputs:
        raise ValueError("convert exports with torch.export: pass example `inputs`")
    script = torch.export.export(model, (inputs[0],))
    if path is not None:
        torch.export.save(script, path, extra_files={"meta": "1"})
    for x in inputs or ():
        script.module()(x)
    return script


def load(path, map_location=None):
    return torch.export.load(path).module().to(map_location)


def convert_and_save(model, path, inputs=None):
    convert(model, path, inputs=inputs)
"""

# The examples: what `main` is called with in run.py (through its parameter), and the
# shape of the random tensor `again` calls the loaded module with, as zeros.
USE_AFTER = USE.replace(
    "convert(torch.nn.Linear(8, 3), PATH)",
    "convert(torch.nn.Linear(8, 3), PATH, inputs=[torch.ones(3, 8)])",
).replace(
    'convert_and_save(torch.nn.Linear(8, 3), "again.pt")',
    'convert_and_save(torch.nn.Linear(8, 3), "again.pt", inputs=[torch.zeros(5, 8)])',
)


def _tree(root: Path, use: str = USE) -> Path:
    for name, text in {
        "pkg/__init__.py": "",
        "pkg/utils.py": UTILS,
        "pkg/use.py": use,
        "run.py": RUN,
    }.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return root


def _apply(root: Path, *extra: str):
    run = run_cli(["apply", ".", "--allow-dirty", "--no-cache", *extra], cwd=root)
    assert run.code in (0, 1), run.stderr
    return run


def _findings(root: Path, *extra: str) -> list[dict]:
    run = run_cli(["scan", ".", "--no-cache", "--format", "json", *extra], cwd=root)
    assert run.code in (0, 1), run.stderr
    return json.loads(run.stdout)["findings"]


def test_drop_moves_the_wrappers_to_export_and_passes_examples_to_their_calls(tmp_path):
    for name, extra in {
        "keep": ("--intent", "keep-scriptable", "--unsafe-fixes"),
        "none": ("--unsafe-fixes",),
        "safe": ("--intent", "drop"),  # the rewrite is unsafe: a plain apply leaves it
    }.items():
        other = _tree(tmp_path / name)
        _apply(other, *extra)
        assert (other / "pkg/utils.py").read_text() == UTILS, name
        assert (other / "pkg/use.py").read_text() == USE, name
    root = _tree(tmp_path / "drop")
    found = _findings(root, "--intent", "drop")
    assert len(found) == 10 and all(f["fix"] == "auto" for f in found)
    wrapper = next(f for f in found if (f["path"], f["line"]) == ("pkg/utils.py", 4))
    # The message names the API change outside callers see.
    assert (
        "API change for outside callers: `convert` keeps its name and parameters"
        in (wrapper["message"])
    )
    assert "returns a `torch.export.ExportedProgram`" in wrapper["message"]
    run = _apply(root, "--intent", "drop", "--unsafe-fixes")
    assert "Fixed 10 findings in 2 files." in run.stdout, run.stdout
    assert (root / "pkg/utils.py").read_text() == UTILS_AFTER
    assert (root / "pkg/use.py").read_text() == USE_AFTER
    assert (root / "run.py").read_text() == RUN
    assert not _findings(root, "--intent", "drop")


def test_a_wrapper_calling_a_wrapper_is_one_and_its_calls_ride_on_both(tmp_path):
    root = _tree(tmp_path)
    found = {(f["path"], f["line"]): f for f in _findings(root)}
    outer = found[("pkg/use.py", 15)]
    assert outer["message"].startswith(
        "`convert_and_save(...)` calls the repository's TorchScript wrapper "
        "`pkg.utils.convert_and_save` (pkg/utils.py:17), which scripts `model` (convert, "
        "line 18), writes the archive to `path` (convert, line 18): this call is a capture "
        'and a producer (writes `"again.pt"`)'
    )
    # Its body's call of `convert` is a call site too; the outer one has no finding of its own.
    assert ("pkg/utils.py", 18) in found and ("pkg/utils.py", 17) not in found
    drop = {(f["path"], f["line"]): f for f in _findings(root, "--intent", "drop")}
    assert "is fixed with the wrapper" in drop[("pkg/use.py", 15)]["message"]
    assert (
        "(MIG121 at line 4, MIG101 at line 5, MIG201 at line 7 in pkg/utils.py)"
        in (drop[("pkg/use.py", 15)]["message"])
    )


def test_a_call_with_no_example_is_reported_there_and_the_saving_wrappers_move(tmp_path):
    """`convert` saves what it scripts, so it has no eager route: a call passing no example
    does not keep the file's wrappers on TorchScript; it is left for a person, named, and
    the wrapper's guard raises there until the inputs are passed."""
    root = _tree(tmp_path, USE.replace("    return net(x)\n", "    return net\n"))
    found = {(f["path"], f["line"]): f for f in _findings(root, "--intent", "drop")}
    assert found[("pkg/utils.py", 4)]["fix"] == "auto"
    call = found[("pkg/use.py", 9)]
    assert call["fix"] == "assisted"
    assert (
        "this call passes no example `inputs`, and the tool cannot see what the program calls "
        "the module with: pass `inputs=[...]` here (a person must choose the shapes); until "
        "then the call raises ValueError naming the parameter"
    ) in call["message"]
    _apply(root, "--intent", "drop", "--unsafe-fixes")
    assert (root / "pkg/utils.py").read_text() == UTILS_AFTER
    use = (root / "pkg/use.py").read_text()
    assert "convert(torch.nn.Linear(8, 3), PATH)\n" in use  # left for a person
    assert 'again.pt", inputs=[torch.zeros(5, 8)])' in use


CHECK = """\
import sys
from pathlib import Path

sys.exit(1 if "torch.export" in Path("pkg/utils.py").read_text() else 0)
"""


def test_the_test_gate_reverts_the_wrappers_and_their_callers_together(tmp_path):
    root = _tree(tmp_path)
    (root / "check.py").write_text(CHECK, encoding="utf-8")
    run = _apply(root, "--intent", "drop", "--unsafe-fixes", "--test", "python check.py")
    assert "reverted" in run.stdout, run.stdout
    # The calls' edits (in another file) are reverted with the wrappers they ride on.
    assert (root / "pkg/utils.py").read_text() == UTILS
    assert (root / "pkg/use.py").read_text() == USE


def test_a_wrapper_export_cannot_take_holds_the_file_and_says_why(tmp_path):
    root = _tree(tmp_path)
    utils = UTILS.replace("    for x in inputs or ():\n        script(x)\n", "")
    (root / "pkg/utils.py").write_text(utils, encoding="utf-8")
    for extra, said in {
        ("--intent", "drop"): "Not rewritten: it cannot move to torch.export here: ",
        (): "Not rewritten: it is public API (users call it and get TorchScript back) and cannot "
        "move to torch.export as written: ",
    }.items():
        found = _findings(root, *extra)
        wrapper = next(f for f in found if (f["path"], f["line"]) == ("pkg/utils.py", 4))
        assert wrapper["fix"] == "assisted"
        assert wrapper["message"].endswith(
            f"{said}`convert` never calls what it scripts with a parameter's items (`for x in "
            "inputs: module(x)`), so no parameter holds the example inputs export needs"
        )
    _apply(root, "--intent", "drop", "--unsafe-fixes")
    assert (root / "pkg/utils.py").read_text() == utils
    assert (root / "pkg/use.py").read_text() == USE


def test_a_caller_with_fixes_of_its_own_still_gets_its_example(tmp_path):
    # pkg/use.py sorts before pkg/utils.py and has a unit of its own (the folded question):
    # the wrappers' file is fixed first, then the calls' edits are written with the fold.
    scripting = "\n\ndef scripting():\n    return torch.jit.is_scripting()\n"
    root = _tree(tmp_path, USE + scripting)
    run = _apply(root, "--intent", "drop", "--unsafe-fixes")
    assert "Fixed 11 findings in 2 files." in run.stdout, run.stdout
    assert (root / "pkg/utils.py").read_text() == UTILS_AFTER
    after = USE_AFTER + scripting.replace("torch.jit.is_scripting()", "False")
    assert (root / "pkg/use.py").read_text() == after
