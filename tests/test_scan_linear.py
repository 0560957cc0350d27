"""A scan's cost grows with the files, never with files times files: counted, never timed.

- Each file is parsed at most once per scan: the checks' walk, the re-export pass, the
  repository pass, the intent comparison and the planner's facts share one tree
  (migrate.analysis.parsed). Counted at `compile`, which `ast.parse` calls, so a stage that
  parses on its own is caught too.
- The repository pass decodes each wrapper's record once per scan, not once per file that
  asks (a repository of thousands of one-line wrappers was quadratic), and analyses each file
  at most once more.
"""

from __future__ import annotations

import builtins
import json
from collections import Counter
from pathlib import Path

import pytest

from migrate.checks.repository_wrappers import Wrapper
from migrate.scan import workers
from tests.scan_support import invoke, write_tree

# Every stage that reads trees has work here: a torch name re-exported by the package
# (the re-export pass), wrappers called from other modules and from a file the prefilter
# skips (the repository pass), an archive written and read (the planner's facts), a class
# scripted in another module (MIG131), `is_scripting` (MIG110).
PACKAGE = {
    "pkg/__init__.py": "",
    "pkg/compat.py": "from torch.jit import script\n",
    "pkg/models.py": """\
        import torch


        class Net(torch.nn.Module):
            def forward(self, x):
                if torch.jit.is_scripting():
                    return x
                if x.sum() > 0:
                    return x * 2
                return x
        """,
    "pkg/export.py": """\
        import torch

        from pkg.compat import script
        from pkg.models import Net


        def export(path):
            module = script(Net())
            torch.jit.save(module, path)


        export("net.pt")
        """,
    "pkg/serve.py": """\
        import torch

        model = torch.jit.load("net.pt")
        """,
    "pkg/wrappers.py": """\
        import torch


        def to_torchscript(model):
            return torch.jit.script(model)
        """,
    "pkg/use_wrappers.py": """\
        from pkg.models import Net
        from pkg.wrappers import to_torchscript

        scripted = to_torchscript(Net())
        """,
    "scripts/run.py": """\
        from pkg.models import Net
        from pkg.wrappers import to_torchscript

        to_torchscript(Net())
        """,
}


def _chain(count: int) -> dict[str, str]:
    """`count` modules, each defining a one-line wrapper and calling the next one's."""
    files = {"chain/__init__.py": ""}
    for i in range(count):
        j = (i + 1) % count
        files[f"chain/w{i}.py"] = (
            f"import torch\n\nfrom chain.w{j} import f{j}\n\n\n"
            f"def f{i}(m):\n    return torch.jit.script(m)\n\n\n"
            f"def use{i}(m):\n    return f{j}(m)\n"
        )
    return files


def _parses(root: Path, monkeypatch: pytest.MonkeyPatch, *args: str) -> tuple[Counter, dict]:
    """How often each file's text was compiled during one in-process scan, and the report."""
    texts = {}  # text -> its file (the empty ones hold nothing to parse)
    for path in root.rglob("*.py"):
        if path.stat().st_size:
            texts[path.read_text(encoding="utf-8")] = path.relative_to(root).as_posix()
    counts: Counter[str] = Counter()
    real = builtins.compile

    def counting(source, *rest, **kw):
        if isinstance(source, str) and source in texts:
            counts[texts[source]] += 1
        return real(source, *rest, **kw)

    with monkeypatch.context() as patch:
        patch.setattr(builtins, "compile", counting)
        run = invoke(["scan", ".", "--no-cache", "-j", "1", "-f", "json", *args], root)
    assert run.code == 1, run.stderr
    return counts, json.loads(run.stdout)


def test_each_file_is_parsed_once_by_every_stage_together(tmp_path, monkeypatch):
    root = write_tree(tmp_path / "repo", {**PACKAGE, **_chain(12)})
    counts, doc = _parses(root, monkeypatch, "--compare-intents")
    twice = {path: n for path, n in counts.items() if n > 1}
    assert twice == {}, f"parsed more than once: {twice}"
    # Every stage had work, so a stage that parsed on its own would have been counted.
    by_path = Counter((f["path"], f["rule"]) for f in doc["findings"])
    assert by_path[("pkg/export.py", "MIG101")] == 1  # through pkg.compat's re-export
    assert by_path[("pkg/use_wrappers.py", "MIG121")] == 1  # another module's wrapper
    assert by_path[("scripts/run.py", "MIG121")] == 1  # a file the prefilter skipped
    assert by_path[("chain/w3.py", "MIG121")] >= 1
    assert by_path[("pkg/serve.py", "MIG202")] == 1
    assert set(doc["summary"]["fixes_by_intent"]) == {"none", "drop", "keep-scriptable"}
    nonempty = {p.relative_to(root).as_posix() for p in root.rglob("*.py") if p.stat().st_size}
    assert set(counts) == nonempty


def test_under_an_intent_too(tmp_path, monkeypatch):
    root = write_tree(tmp_path / "repo", {**PACKAGE, **_chain(6)})
    counts, doc = _parses(root, monkeypatch, "--intent", "drop")
    assert {path: n for path, n in counts.items() if n > 1} == {}
    assert doc["summary"]["intent"] == "drop" and len(counts) >= 12


def _repository_pass_work(root: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Wrapper records decoded, files analysed, and findings, in one in-process scan."""
    work: Counter[str] = Counter()
    decode, analyse = Wrapper.decode.__func__, workers.analyze_python  # type: ignore[attr-defined]

    def counting_decode(cls, text):
        work["decoded"] += 1
        return decode(cls, text)

    def counting_analyse(*args, **kw):
        work["analysed"] += 1
        return analyse(*args, **kw)

    with monkeypatch.context() as patch:
        patch.setattr(Wrapper, "decode", classmethod(counting_decode))
        patch.setattr(workers, "analyze_python", counting_analyse)
        run = invoke(["scan", ".", "--no-cache", "-j", "1", "-f", "json"], root)
    assert run.code == 1, run.stderr
    work["findings"] = len(json.loads(run.stdout)["findings"])
    return dict(work)


@pytest.mark.parametrize("count", [1000, 2000])
def test_thousands_of_wrapper_files_cost_what_their_number_says(tmp_path, monkeypatch, count):
    root = write_tree(tmp_path / "repo", _chain(count))
    work = _repository_pass_work(root, monkeypatch)
    # Each file: a wrapper definition and a call of the next file's wrapper (a capture,
    # reported with the wrapper's group) and the scripting inside it.
    assert work["findings"] == 3 * count
    assert work["decoded"] == count  # each record once, not once per file that asks
    assert work["analysed"] <= 2 * count  # phase 1, then the repository pass at most once
