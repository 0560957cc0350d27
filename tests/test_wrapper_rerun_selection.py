"""The repository pass analyses a file again for the wrapper rule only when it may call a
wrapper of another module: it imports the wrapper itself, or imports a module holding one and
spells the wrapper's name (or a name it is re-exported as). A file importing that module for
something else is not analysed again, and its findings are the same."""

from __future__ import annotations

import json
from collections import Counter

from migrate.scan import workers
from tests.scan_support import invoke, write_tree

TREE = {
    "pkg/__init__.py": "from pkg.utils import to_torchscript as compile_model\n",
    "pkg/utils.py": """\
        import torch


        def to_torchscript(model):
            return torch.jit.script(model)


        def other(x):
            return x
        """,
    "pkg/module_other.py": """\
        from pkg import utils

        print(utils.other(1))
        """,
    "pkg/module_other_parsed.py": """\
        import torch

        from pkg import utils

        print(utils.other(torch.jit.is_scripting()))
        """,
    "pkg/module_call.py": """\
        from pkg import utils
        from pkg.models import Net

        scripted = utils.to_torchscript(Net())
        """,
    "pkg/alias_call.py": """\
        from pkg import compile_model
        from pkg.models import Net

        scripted = compile_model(Net())
        """,
    "pkg/direct.py": """\
        from pkg.models import Net
        from pkg.utils import to_torchscript

        scripted = to_torchscript(Net())
        """,
    "pkg/models.py": """\
        import torch


        class Net(torch.nn.Module):
            def forward(self, x):
                return x
        """,
    "pkg/lonely.py": """\
        import torch


        def script_it(model):
            return torch.jit.script(model)
        """,
}


def test_only_files_that_may_call_a_wrapper_are_analysed_again(tmp_path, monkeypatch):
    root = write_tree(tmp_path / "repo", TREE)
    analysed: Counter[str] = Counter()
    analyse = workers.analyze_python

    def counting(display, *args, **kwargs):
        analysed[display] += 1
        return analyse(display, *args, **kwargs)

    monkeypatch.setattr(workers, "analyze_python", counting)
    run = invoke(["scan", ".", "--no-cache", "-j", "1", "-f", "json"], root)
    assert run.code == 1, run.stderr
    calls = Counter(f["path"] for f in json.loads(run.stdout)["findings"] if f["rule"] == "MIG121")
    # The calls through the module and through the direct import are found...
    assert calls["pkg/module_call.py"] == 1 and calls["pkg/direct.py"] == 1
    assert analysed["pkg/module_call.py"] == 2 and analysed["pkg/direct.py"] == 2
    # ... and so is the one through the name the package re-exports it as.
    assert calls["pkg/alias_call.py"] == 1
    # A file that imports the module for another function is analysed at most once: in
    # phase 1, or (one the prefilter skipped) not at all; no finding.
    assert analysed["pkg/module_other_parsed.py"] == 1, analysed
    assert analysed["pkg/module_other.py"] == 0, analysed
    assert calls["pkg/module_other.py"] == calls["pkg/module_other_parsed.py"] == 0
    # A file defining a wrapper: analysed again to report the definition once another file
    # calls it; a wrapper no file calls keeps phase 1's verdict (no finding), unanalysed.
    assert calls["pkg/utils.py"] == 1 and analysed["pkg/utils.py"] == 2, analysed
    assert calls["pkg/lonely.py"] == 0 and analysed["pkg/lonely.py"] == 1, analysed


STAR_TREE = {
    "pkg/__init__.py": "",
    "pkg/utils.py": TREE["pkg/utils.py"],
    "pkg/models.py": TREE["pkg/models.py"],
    "pkg/star_calls.py": """\
        import torch

        from pkg import utils as helpers
        from pkg.models import *
        from pkg.utils import to_torchscript as ts

        build = ts
        direct = ts(Net())
        through_module = helpers.to_torchscript(Net())
        through_alias = build(Net())
        unrelated = helpers.other(torch.ones(1))
        """,
}


def test_a_file_with_a_star_import_finds_the_calls_of_its_names(tmp_path):
    """A star import hands on names the file never spells in an import: the wrapper rule
    then looks at every call spelled with a name a wrapper is called by (its own, `ts`,
    `build`, the module `helpers`), and finds each of them; the other calls are not its."""
    root = write_tree(tmp_path / "repo", STAR_TREE)
    run = invoke(["scan", ".", "--no-cache", "-j", "1", "-f", "json"], root)
    assert run.code == 1, run.stderr
    lines = sorted(
        f["line"]
        for f in json.loads(run.stdout)["findings"]
        if f["rule"] == "MIG121" and f["path"] == "pkg/star_calls.py"
    )
    assert lines == [8, 9, 10]


def test_a_wrapper_in_a_file_that_never_says_jit_is_found_through_a_reexport(tmp_path):
    """A file without the word `jit` cannot name a TorchScript API by itself, and its wrapper
    search is skipped in phase 1; through a module re-exporting `torch.jit.script` it can,
    and the re-export pass finds the wrapper and its callers."""
    root = write_tree(
        tmp_path / "repo",
        {
            "pkg/__init__.py": "",
            "pkg/api.py": "from torch.jit import script as make\n",
            "pkg/tool.py": "from pkg.api import make\n\n\ndef convert(model):\n    return make(model)\n",
            "run.py": "import torch\nfrom pkg.tool import convert\n\n"
            "net = convert(torch.nn.Linear(2, 2))\n",
        },
    )
    run = invoke(["scan", ".", "--no-cache", "-j", "1", "-f", "json"], root)
    assert run.code == 1, run.stderr
    found = sorted(
        (f["path"], f["line"]) for f in json.loads(run.stdout)["findings"] if f["rule"] == "MIG121"
    )
    assert found == [("pkg/tool.py", 4), ("run.py", 4)]
