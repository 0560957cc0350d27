"""The migration intent (issue 27): `[tool.migrate] intent`, `--intent`, what each intent
rewrites and holds, and that every report shows it. Real CLI subprocesses."""

from __future__ import annotations

import json
from pathlib import Path

from tests.scan_support import clean_env, run_cli, write_tree

LIB = {
    "lib/__init__.py": "",
    "lib/ops.py": """\
        import typing
        from typing import List

        import torch


        @torch.jit.script
        def gelu(x: torch.Tensor) -> torch.Tensor:
            return x * torch.sigmoid(1.702 * x)


        def pick(x: torch.Tensor, foreach: bool) -> torch.Tensor:
            if foreach and torch.jit.is_scripting():
                return x
            if not typing.TYPE_CHECKING and torch.jit.is_scripting():
                x = x * 2
            sizes = torch.jit.annotate(List[int], [])
            return x + len(sizes)
        """,
    "lib/layers.py": """\
        import torch
        from torch import nn

        from lib.ops import gelu, pick


        @torch.jit.interface
        class Act(nn.Module):
            def forward(self, x: torch.Tensor) -> torch.Tensor:
                pass


        class Block(nn.Module):
            width: torch.jit.Final[int]
            act: Act

            def __init__(self, width: int, act: Act) -> None:
                super().__init__()
                self.width = width
                self.act = act

            def forward(self, x: torch.Tensor) -> torch.Tensor:
                return pick(gelu(self.act(x)), False)

            @torch.jit.unused
            def describe(self) -> str:
                return "block"


        @torch.jit._overload
        def pad(x: int) -> int: ...


        def pad(x):
            return x
        """,
    "bench.py": """\
        import torch

        from lib.layers import Block


        def main():
            block = Block(4, torch.nn.ReLU())
            x = torch.randn(2, 4)
            scripted = torch.jit.script(block)
            return scripted(x)
        """,
}


def _lib(tmp_path: Path, config: str = "") -> Path:
    root = write_tree(tmp_path / "repo", LIB)
    if config:
        (root / "pyproject.toml").write_text(config, encoding="utf-8")
    return root


def _scan(root: Path, *args: str) -> dict:
    run = run_cli(["scan", ".", "--no-cache", "--format", "json", *args], cwd=root)
    assert run.code in (0, 1), run.stderr
    return run.json()


def _diff(root: Path, *args: str) -> str:
    run = run_cli(["apply", ".", "--dry-run", "--no-cache", "--unsafe-fixes", *args], cwd=root)
    assert run.code in (0, 1), run.stderr
    return run.stdout


def _fix_kinds(doc: dict, rule: str) -> list[str]:
    return [f["fix"] for f in doc["findings"] if f["rule"] == rule]


def test_unknown_intent_is_a_one_line_error_naming_the_file(tmp_path):
    root = _lib(tmp_path, '[tool.migrate]\nintent = "dorp"\n')
    run = run_cli(["scan", "."], cwd=root)
    assert run.code == 2
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and "pyproject.toml" in lines[0] and "`intent`" in lines[0]
    assert '"drop" or "keep-scriptable"' in lines[0] and "'dorp'" in lines[0]
    bad = _lib(tmp_path / "b", '[tool.migrate]\nscripted-functions = "jit"\n')
    run = run_cli(["scan", "."], cwd=bad)
    assert run.code == 2 and "`scripted-functions`" in run.stderr
    run = run_cli(["scan", ".", "--intent", "everything"], cwd=_lib(tmp_path / "c"))
    assert run.code == 2 and "--intent must be one of drop, keep-scriptable" in run.stderr


def test_without_intent_each_site_as_before_and_the_counts_per_intent(tmp_path):
    plain = _scan(_lib(tmp_path))
    assert plain["summary"]["intent"] is None and "fixes_by_intent" not in plain["summary"]
    doc = _scan(_lib(tmp_path), "--compare-intents")  # the counts are asked for
    assert doc["findings"] == plain["findings"]
    assert doc["summary"]["intent"] is None
    # is_scripting still answers while the repository scripts code; stubs keep typing.overload
    assert _fix_kinds(doc, "MIG110") == ["assisted", "assisted"]
    assert _fix_kinds(doc, "MIG117") == ["manual"]
    by_intent = doc["summary"]["fixes_by_intent"]
    auto = sum(f["fix"] == "auto" for f in doc["findings"])
    assert by_intent["none"] == auto
    assert by_intent["drop"] == len(doc["findings"])  # everything goes under drop
    assert by_intent["keep-scriptable"] < by_intent["none"]


def test_drop_migrates_every_construct_in_one_run(tmp_path):
    root = _lib(tmp_path)
    doc = _scan(root, "--intent", "drop")
    assert doc["summary"]["intent"] == "drop" and "fixes_by_intent" not in doc["summary"]
    assert {f["fix"] for f in doc["findings"]} == {"auto"}, [
        f["message"] for f in doc["findings"] if f["fix"] != "auto"
    ]
    diff = _diff(root, "--intent", "drop")
    removed = [line for line in diff.splitlines() if line.startswith("-") and "jit" in line]
    kept = [line for line in diff.splitlines() if line.startswith(("+", " ")) and "jit" in line]
    assert not kept, kept
    jit_lines = [line for text in LIB.values() for line in text.splitlines() if "jit" in line]
    assert len(removed) == len(jit_lines) == 9
    added = "\n".join(line for line in diff.splitlines() if line.startswith("+"))
    assert "False" not in added and "TYPE_CHECKING" not in added
    assert "class Act" not in diff.split("+++ b/lib/layers.py")[1].replace("-class Act", "")
    assert "+    def __init__(self, width: int, act) -> None:" in diff
    assert "+    width: int" in diff
    assert "-def pad(x: int) -> int: ..." in diff


def test_drop_takes_a_script_it_cannot_classify_the_eager_route(tmp_path):
    root = _lib(tmp_path)
    # The tool cannot tell what `thing` is: under drop it is used as it is, and holds nothing.
    (root / "extra.py").write_text(
        "import torch\n\n\ndef f(thing):\n    return torch.jit.script(thing)\n", encoding="utf-8"
    )
    doc = _scan(root, "--intent", "drop")
    (script,) = [f for f in doc["findings"] if f["path"] == "extra.py"]
    assert script["fix"] == "auto" and script["applicability"] == "unsafe"
    assert "eager object" in script["message"]
    assert _fix_kinds(doc, "MIG110") == ["auto", "auto"]
    diff = _diff(root, "--intent", "drop")
    assert "-    return torch.jit.script(thing)\n+    return thing\n" in diff


def test_drop_a_script_that_stays_holds_only_its_own_file(tmp_path):
    root = _lib(tmp_path)
    # Its result is saved as a TorchScript archive and the tool sees no example inputs: it
    # stays for a person to decide, and holds what it may compile in its file, not lib/.
    (root / "extra.py").write_text(
        "import torch\n\n\ndef f(thing, path):\n"
        "    scripted = torch.jit.script(thing)\n"
        "    scripted.save(path)\n\n\n"
        "def g(x):\n"
        "    if torch.jit.is_scripting():\n"
        "        return x\n"
        "    return x + 1\n",
        encoding="utf-8",
    )
    doc = _scan(root, "--intent", "drop")
    (script,) = [f for f in doc["findings"] if f["path"] == "extra.py" and f["rule"] == "MIG101"]
    assert script["fix"] == "assisted" and "`.save` on line 6" in script["message"]
    kinds = {(f["path"], f["fix"]) for f in doc["findings"] if f["rule"] == "MIG110"}
    assert kinds == {("lib/ops.py", "auto"), ("extra.py", "assisted")}, kinds
    (beside,) = [f for f in doc["findings"] if f["rule"] == "MIG110" and f["path"] == "extra.py"]
    assert "extra.py:5 stays" in beside["message"]


def test_an_interface_another_module_names_stays(tmp_path):
    root = _lib(tmp_path)
    (root / "lib" / "uses.py").write_text("from lib.layers import Act\n", encoding="utf-8")
    doc = _scan(root, "--intent", "drop")
    (interface,) = [f for f in doc["findings"] if f["rule"] == "MIG117"]
    assert interface["fix"] == "assisted" and "named in lib/uses.py" in interface["message"]


def test_keep_scriptable_changes_only_what_warns(tmp_path):
    root = _lib(tmp_path)
    doc = _scan(root, "--intent", "keep-scriptable")
    auto = {f["rule"] for f in doc["findings"] if f["fix"] == "auto"}
    assert auto == {"MIG101"}
    for rule in ("MIG104", "MIG108", "MIG110", "MIG111", "MIG112"):
        for f in doc["findings"]:
            if f["rule"] == rule:
                assert "intent keep-scriptable" in f["message"] or f["fix"] != "auto"
    diff = _diff(root, "--intent", "keep-scriptable")
    assert "-    scripted = torch.jit.script(block)" in diff
    assert "is_scripting" not in "".join(line for line in diff.splitlines() if line.startswith("-"))


def test_scripted_functions_compile(tmp_path):
    root = _lib(tmp_path, '[tool.migrate]\nscripted-functions = "compile"\n')
    diff = _diff(root)
    assert "-@torch.jit.script\n+@torch.compile\n" in diff
    doc = _scan(root)
    (gelu,) = [f for f in doc["findings"] if f["rule"] == "MIG101" and f["line"] == 7]
    assert gelu["applicability"] == "unsafe" and "new shapes" in gelu["message"]
    plain = _scan(_lib(tmp_path / "plain"))
    (gelu,) = [f for f in plain["findings"] if f["rule"] == "MIG101" and f["line"] == 7]
    assert gelu["applicability"] == "safe" and 'scripted-functions = "compile"' in gelu["message"]


def test_every_report_shows_the_intent(tmp_path):
    root = _lib(tmp_path)
    text = run_cli(["scan", ".", "--no-cache", "--intent", "drop"], cwd=root).stdout
    assert "Intent: the repository drops TorchScript" in text
    text = run_cli(["scan", ".", "--no-cache"], cwd=root).stdout
    assert "Intent: none: each site is decided alone; `--compare-intents` counts" in text
    assert "`--intent drop`" not in text  # the counts cost a second analysis: asked for
    text = run_cli(["scan", ".", "--no-cache", "--compare-intents"], cwd=root).stdout
    assert "Intent: none" in text and "`--intent drop`" in text
    sarif = json.loads(
        run_cli(
            ["scan", ".", "--no-cache", "-f", "sarif", "--intent", "keep-scriptable"], root
        ).stdout
    )
    assert sarif["runs"][0]["properties"]["intent"] == "keep-scriptable"
    out = root.parent / "plan.html"
    run = run_cli(["report", ".", "-f", "html", "-o", str(out), "--intent", "drop"], cwd=root)
    assert run.code == 0, run.stderr
    assert "Intent: the repository drops TorchScript" in out.read_text(encoding="utf-8")
    applied = run_cli(["apply", ".", "--dry-run", "--no-cache", "--intent", "drop"], cwd=root)
    assert "Intent: the repository drops TorchScript" in applied.stdout
    env = clean_env(root)
    (root / "pyproject.toml").write_text('[tool.migrate]\nintent = "drop"\n', encoding="utf-8")
    doc = json.loads(run_cli(["scan", ".", "--no-cache", "-f", "json"], root, env).stdout)
    assert doc["summary"]["intent"] == "drop"


def test_with_an_intent_importers_of_a_scripted_function_get_the_plain_one(tmp_path):
    root = write_tree(
        tmp_path / "repo",
        {
            "pkg/__init__.py": "",
            "pkg/ops.py": """\
                import torch


                def swish(x):
                    return x * torch.sigmoid(x)


                swish = torch.jit.script(swish)
                """,
            "pkg/use.py": "from pkg.ops import swish\n\n\ndef run(x):\n    return swish(x)\n",
        },
    )
    (plain,) = [f for f in _scan(root)["findings"] if f["rule"] == "MIG101"]
    assert plain["fix"] == "assisted" and "another module imports it" in plain["message"]
    for intent in ("drop", "keep-scriptable"):
        (fixed,) = [f for f in _scan(root, "--intent", intent)["findings"] if f["rule"] == "MIG101"]
        assert fixed["fix"] == "auto", fixed["message"]


EXTRAS = {
    "pkg/__init__.py": "",
    "pkg/model.py": """\
        import torch
        from torch import nn


        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 2)

            @torch.jit.export
            def embed(self, x):
                return self.fc(x)

            def forward(self, x):
                return self.embed(x).relu()
        """,
    "pkg/speed.py": """\
        import torch

        torch._C._jit_set_profiling_executor(False)
        flag = torch._C._jit_set_texpr_fuser_enabled(False)
        """,
}


def test_drop_removes_export_decorators_and_executor_switches_once_nothing_scripts(tmp_path):
    """Under drop, `@torch.jit.export` (MIG105) goes like `@torch.jit.ignore`, and a statement
    that only switches TorchScript's executor (MIG119) goes, unsafe; a switch whose result is
    kept stays manual. Without an intent both stay as before (assisted / manual)."""
    root = write_tree(tmp_path / "repo", EXTRAS)
    by_rule = {
        (f["rule"], f["line"]): f["fix"] for f in _scan(root, "--intent", "drop")["findings"]
    }
    assert by_rule == {("MIG105", 10): "auto", ("MIG119", 3): "auto", ("MIG119", 4): "manual"}
    diff = _diff(root, "--intent", "drop")
    assert "-    @torch.jit.export\n" in diff
    assert "-torch._C._jit_set_profiling_executor(False)\n" in diff
    assert "-flag" not in diff
    plain = {(f["rule"], f["line"]): f["fix"] for f in _scan(root)["findings"]}
    assert plain == {("MIG105", 10): "assisted", ("MIG119", 3): "manual", ("MIG119", 4): "manual"}


def test_drop_keeps_export_decorators_and_executor_switches_while_a_script_stays(tmp_path):
    root = write_tree(tmp_path / "repo", EXTRAS)
    # It scripts Net, and its `.code` only exists on a TorchScript module: the script stays.
    # It imports the executor settings, so they apply to that script in its process.
    (root / "show.py").write_text(
        "import torch\n\nimport pkg.speed\nfrom pkg.model import Net\n\n\ndef show():\n"
        "    scripted = torch.jit.script(Net())\n    return scripted.code\n",
        encoding="utf-8",
    )
    found = _scan(root, "--intent", "drop")["findings"]
    held = {f["rule"]: f for f in found if f["rule"] in ("MIG105", "MIG119") and f["line"] != 4}
    assert {r: f["fix"] for r, f in held.items()} == {"MIG105": "assisted", "MIG119": "assisted"}
    assert "`Net` is still scripted at show.py:8" in held["MIG105"]["message"]
    assert "`torch.jit.script` at show.py:8 stays" in held["MIG119"]["message"]
    # A script that neither imports the settings nor is imported by them runs without them.
    (root / "show.py").write_text(
        (root / "show.py").read_text(encoding="utf-8").replace("import pkg.speed\n", ""),
        encoding="utf-8",
    )
    found = _scan(root, "--intent", "drop")["findings"]
    (switch,) = [f for f in found if f["rule"] == "MIG119" and f["line"] == 3]
    assert switch["fix"] == "auto", switch["message"]
