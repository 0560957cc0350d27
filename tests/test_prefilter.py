"""The scan's prefilter: which Python files are parsed at all. A file it skips can hold no
finding, so every spelling a check resolves must get through; and prose mentions of an API
should not (issue 16: most of a cold scan's time goes to parsing)."""

from __future__ import annotations

import textwrap

import pytest

from migrate.pipeline.scan import PlannedScanner as Scanner
from migrate.registry import all_rules
from migrate.scan.checkset import CheckSet
from migrate.scan.engine import ScanOptions
from migrate.scan.file_analysis import check_source
from tests.scan_support import write_tree

MODEL = """\
import torch
{imports}

class Gate(torch.nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            return x
        return -x

{call}
"""

# Spellings of an export capture in files that never say `jit`. MIG131 takes a call for a
# capture only when its callee ends in `export`: the aliased spellings find nothing, parsed
# or not, and must find what a full parse finds (nothing).
CAPTURES = {
    "full name": ("import torch.export", "ep = torch.export.export(Gate(), (torch.ones(2),))"),
    "imported alias": (
        "from torch.export import export as capture",
        "ep = capture(Gate(), (torch.ones(2),))",
    ),
    "module alias": (
        "import torch.export\ncapture = torch.export.export",
        "ep = capture(Gate(), (torch.ones(2),))",
    ),
    "annotated module alias": (
        "import torch.export\ncapture: object = torch.export.export  # noqa",
        "ep = capture(Gate(), (torch.ones(2),))",
    ),
    "parenthesised callee": ("", "ep = (torch.export.export)(Gate(), (torch.ones(2),))"),
    "module imported as": (
        "import torch.export as te",
        "ep = te.export(\n    Gate(), (torch.ones(2),)\n)",
    ),
    "callee and parenthesis on two lines": (
        "",
        "ep = (torch.export.export  # the capture\n      (Gate(), (torch.ones(2),)))",
    ),
    "for training": ("", "ep = torch.export.export_for_training(Gate(), (torch.ones(2),))"),
    "onnx": ("", "torch.onnx.export(Gate(), (torch.ones(2),), 'g.onnx', dynamo=True)"),
}


def scan(tmp_path, text: str):
    write_tree(tmp_path, {"model.py": text})
    return Scanner(ScanOptions(cache=False, jobs=1, use_git=False)).scan([str(tmp_path)])


@pytest.mark.parametrize("name", sorted(CAPTURES))
def test_every_spelling_of_an_export_capture_is_parsed(tmp_path, name):
    imports, call = CAPTURES[name]
    text = MODEL.format(imports=imports, call=call)
    result = scan(tmp_path, text)
    got = [(f.rule, f.line) for f in result.findings if f.rule == "MIG131"]
    # What a scan that parses every file finds (check_source never prefilters).
    expected = [(f.rule, f.line) for f in check_source(text, ["MIG131"]) if f.rule == "MIG131"]
    assert got == expected, name
    if "alias" not in name:
        assert result.files_parsed == 1 and got == [("MIG131", 6)], name


@pytest.mark.parametrize(
    "text",
    [
        # torch.export named in an import, an annotation and a docstring: nothing captured.
        "from torch.export import ExportedProgram\n\n\ndef run(ep: ExportedProgram):\n"
        '    """Runs what torch.export produced; we export as .pt2 elsewhere."""\n'
        "    return ep.module()\n",
        "import torch\n\n\ndef load(path):\n    return torch.export.load(path)\n",
    ],
)
def test_a_file_that_only_names_torch_export_is_not_parsed(tmp_path, text):
    result = scan(tmp_path, textwrap.dedent(text))
    assert result.files_parsed == 0
    assert result.findings == []


def test_the_pair_counts_only_when_both_parts_match():
    checks = CheckSet(sorted(all_rules()), {"cuda": "13.0"})
    assert checks.wants_parse("import torch\ntorch.export.export(m, args)\n")
    assert not checks.wants_parse("import torch\nep = torch.export.load(p)\n")
    assert not checks.wants_parse("exporter.export(m)\n")  # the call without torch.export
    assert checks.wants_parse("m = torch.jit.script(m)\n")  # the plain words as before
    # With MIG131 not selected its words do not matter at all.
    assert not CheckSet(["MIG101"], {"cuda": "13.0"}).wants_parse("torch.export.export(m, a)\n")
