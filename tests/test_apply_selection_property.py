"""Property: whatever rules `--select` names, with or without `--unsafe-fixes`, `migrate
apply` never leaves a load behind whose file nothing writes any more (a loader rewritten
while its producer stayed TorchScript, or a producer rewritten while its loader still reads
the old archive).

The tree joins the packages of the artifact cases of fixtures/repos/safety (a service whose
exporter stays for review, a detection loader with a run-time path, a save/load pair sharing
a path constant, a trace + save + load group). The check is static (tests/artifact_flow.py):
nothing is run and torch is never imported.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from migrate.registry import all_rules
from tests.artifact_flow import unmatched_consumers
from tests.scan_support import invoke, write_tree

SAFETY = Path(__file__).resolve().parent.parent / "fixtures" / "repos" / "safety"
# case -> its package folder; distinct names, so the packages live side by side in one tree.
PACKAGES = {
    "a_service": "service",
    "b_detection": "detect",
    "c_shared_path": "ranking",
    "h_select_save": "pair",
}
CODES = sorted(code for code in all_rules() if code.startswith(("MIG1", "MIG2")))
# Drawn too once `apply` has the option (issue 10 adds it); until then only the safe fixes.


def package_of(file: str) -> str:
    """Each package is its own project: an unknown path in one never matches another's file."""
    return file.split("/", 1)[0]


def build_tree(root: Path) -> Path:
    for case, package in PACKAGES.items():
        shutil.copytree(SAFETY / case / "before" / package, root / package)
    return root


def test_the_joined_tree_is_consistent_before_apply():
    with tempfile.TemporaryDirectory() as tmp:
        assert unmatched_consumers(build_tree(Path(tmp)), separate=package_of) == []


@settings(
    max_examples=20,
    deadline=None,
    derandomize=True,
    database=None,
    # A failing selection is reported as found: shrinking would rerun apply many more times.
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    select=st.sets(st.sampled_from(CODES), min_size=1),
    unsafe=st.booleans(),
)
def test_no_selection_leaves_a_load_without_its_producer(select, unsafe):
    with tempfile.TemporaryDirectory() as tmp:
        root = build_tree(Path(tmp) / "repo")
        # The command line in this process, so the defaults are the ones users get.
        selected = ",".join(sorted(select))
        args = ["apply", "--allow-dirty", "--isolated", "--no-cache", "--select", selected]
        args += ["--unsafe-fixes"] if unsafe else []
        run = invoke([*args, str(root)], Path(tmp))
        assert run.code in (0, 1), run.stdout + run.stderr
        unmatched = unmatched_consumers(root, separate=package_of)
        left = "; ".join(f"{use}: nothing in the tree writes it" for use in unmatched)
        assert unmatched == [], f"{' '.join(args)}: {left}"


# The checker itself: it must see a broken flow where there is one, and only there.
LOADER = """
    import torch
    from pkg.paths import MODEL_PATH

    def load():
        return torch.export.load(MODEL_PATH).module()
"""


def flows(tmp_path: Path, producer: str) -> list[str]:
    files = {
        "pkg/__init__.py": "",
        "pkg/paths.py": 'import os\nMODEL_PATH = os.path.join("out", "model.pt2")\n',
        "pkg/load.py": LOADER,
        "pkg/save.py": f"import torch\nfrom pkg.paths import MODEL_PATH\n\n\n{producer}\n",
    }
    return [str(use) for use in unmatched_consumers(write_tree(tmp_path, files))]


def test_checker_flags_a_load_whose_producer_writes_torchscript(tmp_path):
    assert flows(tmp_path, "torch.jit.save(m, 'out/model.pt')") == [
        "pkg/load.py:6 pt2 out/model.pt2"
    ]


def test_checker_matches_a_constant_imported_from_another_module(tmp_path):
    assert flows(tmp_path, "torch.export.save(ep, MODEL_PATH)") == []
    assert flows(tmp_path / "other", "torch.export.save(ep, 'out/model.pt2')") == []
