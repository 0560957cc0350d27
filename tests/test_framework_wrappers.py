"""Framework wrappers that make TorchScript (issue 19): artifact flow and a sample repository.

The rule cases live in fixtures/rules/MIG140-MIG144. Here: `to_torchscript(file_path=p)` is a
producer of `p` in the repository facts, and fixtures/repos/lightning_app (a LightningModule
published with `to_torchscript(file_path=...)` and read back with `torch.jit.load`; Lightning
is a small stand-in package under its site-packages/) still runs and gives the same numbers
after `migrate apply` and `migrate apply --unsafe-fixes`.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.analysis_support import Tree
from tests.scan_support import clean_env, run_cli
from tests.test_apply_safety_repos import assert_same_numbers, numbers, run_programs

SAMPLE = Path(__file__).resolve().parent.parent / "fixtures" / "repos" / "lightning_app" / "before"

SERVE = """
    import torch

    model = torch.jit.load("artifacts/m.pt")
"""


def test_to_torchscript_file_path_is_a_producer_linked_to_its_loader(tmp_path):
    tree = Tree(
        tmp_path,
        {
            "publish.py": """
                import lightning.pytorch as pl

                def publish(model: pl.LightningModule):
                    model.to_torchscript(file_path="artifacts/m.pt", method="trace")
                    model.to_torchscript("artifacts/m.pt")
                    return model.to_torchscript()
            """,
            "serve.py": SERVE,
        },
    )
    facts = tree.facts
    consumer = facts.site_at(*tree.at("serve.py", "torch.jit.load"))
    by_keyword = facts.site_at(*tree.at("publish.py", "model.to_torchscript"))
    positional = facts.site_at(*tree.at("publish.py", "model.to_torchscript", 1))
    assert consumer is not None and by_keyword is not None and positional is not None
    assert by_keyword.role == positional.role == "producer"
    assert by_keyword.api == "LightningModule.to_torchscript"
    assert facts.producers_of(consumer) == [by_keyword, positional]
    # Without a file path it only returns the module: no producer.
    assert facts.site_at(*tree.at("publish.py", "model.to_torchscript", 2)) is None


def test_to_torchscript_of_another_class_writes_nothing(tmp_path):
    tree = Tree(
        tmp_path,
        {
            "publish.py": """
                class Exporter:
                    def to_torchscript(self, file_path=None):
                        return file_path

                Exporter().to_torchscript(file_path="artifacts/m.pt")
            """,
            "serve.py": SERVE,
        },
    )
    consumer = tree.facts.site_at(*tree.at("serve.py", "torch.jit.load"))
    assert consumer is not None and tree.facts.producers_of(consumer) == []
    assert tree.facts.producers == []


def test_scan_finds_to_torchscript_in_a_file_without_jit(tmp_path):
    """The prefilter lets `to_torchscript` through; the loader is linked to its producer."""
    tree = tmp_path / "app"
    shutil.copytree(SAMPLE, tree)
    scan = run_cli(["scan", "--format", "json", "."], tree, clean_env(tmp_path))
    assert scan.code == 1, scan.stderr
    found = {(f["path"], f["line"], f["rule"]): f for f in json.loads(scan.stdout)["findings"]}
    assert ("app/publish.py", 16, "MIG140") in found
    assert ("app/publish.py", 21, "MIG140") in found
    # The load moves with the Lightning save that writes its file (both unsafe fixes).
    loader = found[("app/serve.py", 9, "MIG202")]
    assert (loader["fix"], loader["applicability"]) == ("auto", "unsafe"), loader
    # The stand-in package is installed code, and a docstring mention is no finding.
    assert not [k for k in found if k[0].startswith("site-packages")]
    assert not [k for k in found if k[0] == "app/model.py" and k[2] == "MIG140"]


MODES = {"safe": [], "unsafe": ["--unsafe-fixes"]}


@pytest.mark.verify
@pytest.mark.slow  # two applies and a torch process running the sample: ~9 s CPU
def test_lightning_sample_runs_the_same_after_apply(tmp_path):
    pytest.importorskip("torch")
    trees = {"original": tmp_path / "original"}
    shutil.copytree(SAMPLE, trees["original"])
    for mode, extra in MODES.items():
        tree = tmp_path / mode
        shutil.copytree(SAMPLE, tree)
        applied = run_cli(
            ["apply", "--allow-dirty", *extra, str(tree)], tmp_path, clean_env(tmp_path)
        )
        assert applied.code in (0, 1), applied.stdout + applied.stderr
        # The Lightning save/load pair stays TorchScript together.
        # Compared without whitespace: rewritten calls are wrapped to the line length.
        publish, serve, model = (
            "".join((tree / "app" / name).read_text(encoding="utf-8").split())
            for name in ("publish.py", "serve.py", "model.py")
        )
        # With --unsafe-fixes only: a trace whose result is only called becomes export, and
        # the Lightning save moves to torch.export.save together with its loader.
        rewritten = "torch.export.export(model.eval()," in publish
        assert rewritten == (mode == "unsafe"), f"[{mode}] {publish}"
        saved = "torch.export.save(torch.export.export(model.eval()," in publish
        assert saved == (mode == "unsafe"), f"[{mode}] {publish}"
        assert ("model.to_torchscript(file_path=CLASSIFIER_PATH," in publish) != saved
        loaded = "torch.export.load(CLASSIFIER_PATH).module()" in serve
        assert loaded == saved and ("torch.jit.load(CLASSIFIER_PATH)" in serve) != saved
        # The scaler's trace is only called: it becomes the eager module, a safe fix.
        assert "scaler=Scaler()" in model and "torch.jit.trace" not in model, f"[{mode}] {model}"
        trees[mode] = tree
    runs = run_programs(tmp_path, trees)
    expected = numbers(runs["original"], "original")
    for mode in MODES:
        assert_same_numbers(numbers(runs[mode], mode), expected)


def test_lightning_save_moves_with_its_loader_and_a_script_only_called_goes_eager(tmp_path):
    """The sample's `to_torchscript(file_path=CLASSIFIER_PATH, method="trace")` (its result
    unused) is exported, with a dynamic batch, and saved; the `torch.jit.load` of that file in
    serve.py moves with it; `scripted = model.to_torchscript()` only called becomes the
    module in eval mode. All 5 findings are written (2 before: both stayed assisted)."""
    tree = tmp_path / "app"
    shutil.copytree(SAMPLE, tree)
    dry = run_cli(
        ["apply", "--dry-run", "--allow-dirty", "--unsafe-fixes", "."], tree, clean_env(tmp_path)
    )
    assert "Would fix 5 findings" in dry.stdout, dry.stdout + dry.stderr
    # The added lines, without whitespace: rewritten calls are wrapped to the line length.
    added = "".join(
        "".join(line[1:].split()) for line in dry.stdout.splitlines() if line.startswith("+ ")
    )
    export = "torch.export.save(torch.export.export(model.eval(),(model.example_input_array,),"
    assert export in added
    assert "dynamic_shapes=({0:torch.export.Dim.AUTO},)" in added
    assert "classifier=torch.export.load(CLASSIFIER_PATH).module()" in added
    assert "scripted=model.eval()" in added
    # Plain apply (safe fixes only): the pair stays TorchScript together.
    safe = run_cli(["apply", "--dry-run", "--allow-dirty", "."], tree, clean_env(tmp_path))
    assert (
        "+    classifier = torch.export" not in safe.stdout and "Would fix 1 finding" in safe.stdout
    )


def test_lightning_through_the_repositorys_own_modules(tmp_path):
    """A file importing Lightning's names from a module of the repository is a Lightning
    file: that module re-exports them (skipped by the prefilter: its import lines are
    remembered) or imports Lightning itself (parsed). A file importing neither is not."""
    from migrate.pipeline.scan import scan
    from migrate.scan.engine import ScanOptions

    files = {
        "mypkg/__init__.py": "from lightning.pytorch import LightningModule\n",
        "mypkg/parsed.py": "import pytorch_lightning as pl\nimport torch\n\n"
        "def script(m):\n    return torch.jit.script(m)\n",
        "other/__init__.py": "",
        "reexport.py": "from mypkg import LightningModule\n",
        "parsed.py": "from mypkg.parsed import script\n",
        "unrelated.py": "import other\n",
    }
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if name in ("reexport.py", "parsed.py", "unrelated.py"):
            text += "\n\ndef ship(model):\n    return model.to_torchscript()\n"
        path.write_text(text, encoding="utf-8")
    for select in (["MIG140"], None):  # alone, and with MIG121, which remembers `from` lines
        result = scan([tmp_path], ScanOptions(select=select, cache=False, use_git=False))
        assert not result.errors
        shipping = [Path(f.path).name for f in result.findings if f.rule == "MIG140"]
        assert sorted(shipping) == ["parsed.py", "reexport.py"], select


def test_framework_apis_through_a_repository_reexport(tmp_path):
    """detectron2 and timm APIs imported through a module of the repository resolve to the
    framework's name; the bare top module (`mypkg.timm`) is not followed (every importer
    of such a module would be analysed twice)."""
    from migrate.pipeline.scan import scan
    from migrate.scan.engine import ScanOptions

    (tmp_path / "mypkg").mkdir()
    (tmp_path / "mypkg" / "__init__.py").write_text(
        "import timm\nimport timm.layers as L\nfrom timm import create_model\n"
        "from detectron2.export import scripting_with_instances as swi\n",
        encoding="utf-8",
    )
    (tmp_path / "app.py").write_text(
        "import mypkg\nfrom mypkg import L, create_model, swi\n\n"
        "L.set_scriptable(True)\n"
        "m = create_model('resnet18', scriptable=True)\n"
        "ts = swi(m, {})\n"
        "mypkg.timm.layers.set_scriptable(True)\n",
        encoding="utf-8",
    )
    result = scan([tmp_path], ScanOptions(select=["MIG141", "MIG144"], cache=False, use_git=False))
    assert not result.errors
    assert [(f.line, f.rule) for f in result.findings] == [
        (4, "MIG144"),
        (5, "MIG144"),
        (6, "MIG141"),
    ]
