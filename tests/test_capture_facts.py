"""MIG131's captured classes across files: a capture reaches the class its name resolves to,
not every class of that name in the repository (migrate/checks/_captures.py). Each case is a
small repository scanned by the CLI in a subprocess; the findings say which files' classes
were analysed as captured."""

from __future__ import annotations

import pytest

from migrate.analysis.repository_facts import FileFacts, RepositoryFacts
from migrate.checks._captures import CapturedIndex, modules_meet
from migrate.checks.mig131_data_dependent_branch import DataDependentBranch
from migrate.registry import all_rules
from tests.scan_support import run_cli, write_tree

# A module whose forward branches on a tensor's value; no word of it makes the prefilter
# parse the file, so a capture elsewhere is what gets it analysed.
BRANCHY = """
from torch import nn


class {name}(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, x):
        y = self.proj(x)
        if y.sum() > 0:
            return y * 2
        return y - 1
"""


def _namesakes(root, files: dict[str, str]) -> None:
    """Two packages each defining a `Net` that branches on tensor values, plus `files`."""
    tree = {
        "pkg/__init__.py": "",
        "pkg/models.py": BRANCHY.format(name="Net"),
        "other/__init__.py": "",
        "other/nets.py": BRANCHY.format(name="Net"),
    }
    write_tree(root, {**tree, **files})


def _flagged(root, *paths: str) -> set[str]:
    run = run_cli(["scan", *(paths or ["."]), "--no-cache", "--format", "json"], cwd=root)
    assert run.code in (0, 1), run.stderr
    return {f["path"] for f in run.json()["findings"] if f["rule"] == "MIG131"}


def test_a_class_captured_in_its_own_file_leaves_its_namesakes_alone(tmp_path):
    write_tree(
        tmp_path,
        {
            "test_a.py": BRANCHY.format(name="ToyModel")
            + "\n\ndef test_trace():\n    import torch\n"
            + "    torch.jit.trace(ToyModel(), torch.randn(1, 4))\n",
            "test_b.py": BRANCHY.format(name="ToyModel"),
        },
    )
    assert _flagged(tmp_path) == {"test_a.py"}


def test_an_imported_class_is_analysed_in_its_own_module_only(tmp_path):
    train = "import torch\nfrom pkg.models import Net\n\nm = torch.jit.script(Net().eval())\n"
    _namesakes(tmp_path, {"train.py": train})
    assert _flagged(tmp_path) == {"pkg/models.py"}


@pytest.mark.parametrize(
    ("importer", "line"),
    [
        ("export.py", "from pkg import Net"),  # re-exported by the package
        ("pkg/export.py", "from .models import Net"),  # relative
        ("export.py", "import pkg.models as M\nNet = M.Net"),  # module alias, then a name
    ],
)
def test_reexported_relative_and_aliased_imports_reach_the_defining_module(
    tmp_path, importer, line
):
    export = "ep = torch.export.export(Net(), (torch.randn(1, 4),))\n"
    _namesakes(
        tmp_path,
        {
            "pkg/__init__.py": "from .models import Net\n",
            importer: f"import torch\n{line}\n\n{export}",
        },
    )
    assert _flagged(tmp_path) == {"pkg/models.py"}


def test_a_script_importing_its_neighbour_reaches_it(tmp_path):
    train = "import torch\nfrom models import Net\n\ntorch.jit.script(Net())\n"
    _namesakes(
        tmp_path, {"scripts/models.py": BRANCHY.format(name="Net"), "scripts/train.py": train}
    )
    assert _flagged(tmp_path) == {"scripts/models.py"}


def test_a_name_the_scan_cannot_resolve_still_matches_every_namesake(tmp_path):
    # A star import hides where Net comes from: keep what cannot be told apart.
    train = "import torch\nfrom pkg.models import *\n\ntorch.jit.script(Net())\n"
    _namesakes(tmp_path, {"train.py": train})
    assert _flagged(tmp_path) == {"pkg/models.py", "other/nets.py"}


@pytest.mark.parametrize(
    ("imported", "module", "meet"),
    [
        ("pkg.models", "pkg.models", True),
        ("pkg", "pkg.models", True),  # `from pkg import Net`, defined in pkg.models
        ("pkg.models.Outer", "pkg.models", True),  # a class nested in a class
        ("models", "scripts.models", True),  # a script's neighbour, named from the root
        ("", "pkg.models", True),  # a bare name
        ("pkg.models", "", True),  # a file scanned alone: no module name
        ("pkg.models", "other.models", False),
        ("pkg", "pkgx.models", False),  # a prefix of the text is not a parent package
        ("torch.nn", "tests.test_passes", False),
    ],
)
def test_modules_meet(imported, module, meet):
    assert modules_meet(imported, module) is meet


def test_the_repository_pass_reruns_only_files_whose_module_a_capture_reaches():
    check = DataDependentBranch(all_rules()["MIG131"])
    repo = RepositoryFacts.of_captured_classes({"pkg.models.Net"})
    asked: list[str] = []

    def module(name: str):
        def answer() -> str:
            asked.append(name)
            return name

        return answer

    # Files the prefilter skipped: their remembered class names, then their module.
    assert check.rerun(repo, None, {"Net"}, module("pkg.models"))
    assert not check.rerun(repo, None, {"Net"}, module("other.nets"))
    assert not check.rerun(repo, None, {"Other"}, module("never.asked"))
    # A parsed file: not again for what it captures itself.
    mine = FileFacts()
    mine.tell_defined_classes({"Net"})
    assert check.rerun(repo, mine, set(), module("pkg.models"))
    mine.tell_captured_classes({"pkg.models.Net"})
    assert not check.rerun(repo, mine, set(), module("pkg.models"))
    assert "never.asked" not in asked


def test_an_index_matches_a_bare_fact_anywhere_and_a_qualified_one_by_module():
    index = CapturedIndex({"Bare", "pkg.models.Net"})
    assert index.captures("Bare", lambda: "any.where")
    assert index.captures("Net", lambda: "pkg.models")
    assert not index.captures("Net", lambda: "other.models")
    assert not index.captures("Net", lambda: "pkg.models", besides={"pkg.models.Net"})
