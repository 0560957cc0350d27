"""The package's layout is its pipeline: scan -> facts -> plan -> fix -> report.

Read from the source with `ast` (nothing of the package is imported): every import between
modules of the package, at module level or inside a function, absolute or relative, and every
module loaded by name (`importlib.import_module("migrate.scan.engine")`, or an f-string whose
literal start names one). No two modules may import each other, directly or through others,
and no stage may import a later one. The order:

- shared vocabulary: findings, config, registry, gitsafe, safe_read, safe_write, printable
  (and the package's __init__);
- analysis: migrate/analysis/, what every later stage asks of a file or of the repository
  (each file parsed once per scan, the repository's import index), below the checks and the
  facts that share it;
- checks: migrate/checks/, one module per rule and the helpers rules share (a check sees one
  file; the facts and the fixer reuse its helpers, as later stages may), and migrate/record/
  (what `migrate record` saw is an input the checks read, like the source);
- scan: migrate/scan/, which discovers the files and runs the checks on them (it imports the
  checks; no check imports it);
- facts, then plan, then fix;
- migrate/pipeline/: each command's orchestrator, calling the stages in order;
- report (the migration plan's report runs the apply pipeline as a dry run);
- migrate/cli/ (the command line) may import everything, and so may migrate/codemod.py (the
  same apply for LibCST's command line).

migrate/verify/ stands apart: it imports only the shared vocabulary, the analysis, checks and
scan stages (it runs the data-dependent-branch check on a model's source) and itself, and only
the command line imports it.

Two rules hold inside the order too: a rule's module (migrate/checks/migNNN_*.py) imports no
other rule's module (what two rules share lives in a checks helper named by what it holds),
and a private module (`_name`) is imported only from its own package.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "migrate"

SHARED, ANALYSIS, CHECKS, SCAN, FACTS, PLAN, FIX, PIPELINE, REPORT, CLI = range(10)
VERIFY = -1  # apart from the pipeline
LAYERS = {
    "": SHARED,  # the package's __init__ (its version)
    "findings": SHARED,
    "config": SHARED,
    "registry": SHARED,
    "gitsafe": SHARED,
    "safe_read": SHARED,
    "safe_write": SHARED,
    "printable": SHARED,
    "analysis": ANALYSIS,
    "scan": SCAN,
    "checks": CHECKS,
    "record": CHECKS,
    "facts": FACTS,
    "plan": PLAN,
    "fix": FIX,
    "pipeline": PIPELINE,
    "report": REPORT,
    "cli": CLI,
    "__main__": CLI,
    "codemod": CLI,  # LibCST's command line reaches apply through it
    "verify": VERIFY,
}
NAMES = {SHARED: "shared", ANALYSIS: "analysis", CHECKS: "checks", SCAN: "scan", FACTS: "facts"}
NAMES.update({PLAN: "plan", FIX: "fix"})
NAMES.update({PIPELINE: "pipeline", REPORT: "report", CLI: "cli", VERIFY: "verify"})


def modules(root: Path) -> dict[str, tuple[Path, bool]]:
    """{dotted name: (file, is a package)} of every module under the package folder `root`."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = [root.name, *path.relative_to(root).with_suffix("").parts]
        package = parts[-1] == "__init__"
        found[".".join(parts[:-1] if package else parts)] = (path, package)
    return found


def imports(root: Path) -> dict[str, set[str]]:
    """{module: the package's modules it imports}, each import resolved to the deepest
    module it names (`from pkg.scan import engine` -> pkg.scan.engine)."""
    mods = modules(root)
    out: dict[str, set[str]] = {}
    for name, (path, package) in mods.items():
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                wanted = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    here = name.split(".") if package else name.split(".")[:-1]
                    here = here[: len(here) - (node.level - 1)]
                    base = ".".join([*here, base] if base else here)
                wanted = [f"{base}.{alias.name}" for alias in node.names]
            elif isinstance(node, ast.Call) and (loaded := _loaded_by_name(node, root.name)):
                wanted = [loaded]
            else:
                continue
            for target in wanted:
                while target and target not in mods:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    targets.add(target)
        out[name] = targets
    return out


def _loaded_by_name(call: ast.Call, package: str) -> str | None:
    """The module `importlib.import_module(...)` or `__import__(...)` loads, when its name is
    a literal of the package, or an f-string whose literal start is (`f"pkg.checks.{name}"`
    counts as the package `pkg.checks`)."""
    func = call.func
    named = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    if named not in ("import_module", "__import__") or not call.args:
        return None
    arg = call.args[0]
    if isinstance(arg, ast.JoinedStr):
        arg = arg.values[0] if arg.values else None  # type: ignore[assignment]
    if not (isinstance(arg, ast.Constant) and isinstance(arg.value, str)):
        return None
    text = arg.value.rstrip(".")
    return text if text == package or text.startswith(package + ".") else None


def layer(module: str) -> int | None:
    parts = module.split(".")
    return LAYERS.get(parts[1] if len(parts) > 1 else "")


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def is_rule(module: str) -> bool:
    """A rule's module: the package's checks/migNNN_<slug>."""
    parts = module.split(".")
    return (
        len(parts) == 3 and parts[1] == "checks" and bool(re.fullmatch(r"mig\d{3}_\w+", parts[2]))
    )


def private_package(module: str) -> str | None:
    """The stage package whose private module (a `_name` part) `module` is, else None."""
    parts = module.split(".")
    private = any(p.startswith("_") and not p.startswith("__") for p in parts[1:])
    return parts[1] if private and len(parts) > 2 else None


def problems(root: Path) -> list[str]:
    graph = imports(root)
    found = [f"import circle: {' -> '.join(group)}" for group in circles(graph)]
    for module in sorted(graph):
        here = layer(module)
        if here is None:
            found.append(f"{module}: no stage (add its package to LAYERS in {Path(__file__).name})")
            continue
        for target in sorted(graph[module]):
            if is_rule(module) and is_rule(target):
                found.append(f"{module} imports {target}: a rule imports another rule")
            owner = private_package(target)
            if owner is not None and owner != (module.split(".") + [""])[1]:
                found.append(f"{module} imports {target}: a private module of {owner}/")
            there = layer(target)
            if there is None:
                continue  # reported as the module it is
            if here == VERIFY:
                if there not in (SHARED, ANALYSIS, CHECKS, SCAN, VERIFY):
                    found.append(f"{module} (verify) imports {target} ({NAMES[there]})")
            elif there == VERIFY:
                if here != CLI:
                    found.append(f"{module} ({NAMES[here]}) imports {target}: only cli/ may")
            elif there > here:
                found.append(
                    f"{module} ({NAMES[here]}) imports {target}: {NAMES[there]} is a later stage"
                )
    return found


# Imports the rules above forbid that are known and waiting to be removed. The test fails
# when one is gone, so that the list only shrinks.
WAITING: set[str] = set()


def test_the_package_has_no_circle_and_no_backward_import():
    assert PACKAGE.is_dir()
    assert len(modules(PACKAGE)) > 100  # the real package, not an empty folder
    found = problems(PACKAGE)
    assert [p for p in found if p not in WAITING] == []
    assert sorted(WAITING - set(found)) == []  # gone: take it off WAITING


def _package(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / "migrate" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root / "migrate"


CLEAN = {
    "__init__.py": "",
    "findings.py": "",
    "scan/__init__.py": "",
    "scan/engine.py": "from migrate import findings\n",
    "fix/__init__.py": "",
    "fix/fixer.py": "from ..scan import engine\nfrom migrate.findings import Finding\n",
    "cli/__init__.py": "from migrate.fix import fixer\nimport migrate.verify.load\n",
    "verify/__init__.py": "",
    "verify/errors.py": "",
    "verify/load.py": "from . import errors\nfrom migrate.findings import Finding\n",
}


def test_the_checker_passes_a_package_that_flows_one_way(tmp_path):
    root = _package(tmp_path, CLEAN)
    assert imports(root)["migrate.fix.fixer"] == {"migrate.scan.engine", "migrate.findings"}
    assert problems(root) == []


def test_the_checker_fails_on_a_backward_import_inside_a_function(tmp_path):
    late = "def run():\n    from ..fix.fixer import apply_edits\n    return apply_edits\n"
    root = _package(tmp_path, {**CLEAN, "scan/walker.py": late})
    assert problems(root) == [
        "migrate.scan.walker (scan) imports migrate.fix.fixer: fix is a later stage"
    ]


def test_the_checker_fails_on_a_circle_and_on_crossing_into_verify(tmp_path):
    files = {
        **CLEAN,
        "scan/engine.py": "from migrate.scan import walker\n",
        "scan/walker.py": "import migrate.verify.load\nfrom . import engine\n",
        "facts/__init__.py": "",
        "verify/load.py": "from migrate import facts\n",
    }
    assert problems(_package(tmp_path, files)) == [
        "import circle: migrate.scan.engine -> migrate.scan.walker",
        "migrate.scan.walker (scan) imports migrate.verify.load: only cli/ may",
        "migrate.verify.load (verify) imports migrate.facts (facts)",
    ]


def test_a_module_outside_every_stage_is_named(tmp_path):
    root = _package(tmp_path, {**CLEAN, "helpers.py": "from migrate.scan import engine\n"})
    assert problems(root) == [
        "migrate.helpers: no stage (add its package to LAYERS in test_layers.py)"
    ]


def test_a_rule_imports_no_other_rule_but_shares_through_a_helper(tmp_path):
    files = {
        **CLEAN,
        "checks/__init__.py": "",
        "checks/_trace_capture.py": "from migrate.findings import Finding\n",
        "checks/mig102_jit_trace.py": "from migrate.checks._trace_capture import Finding\n",
        "checks/mig103_jit_trace_module.py": "from migrate.checks.mig102_jit_trace import X\n",
    }
    assert problems(_package(tmp_path, files)) == [
        "migrate.checks.mig103_jit_trace_module imports migrate.checks.mig102_jit_trace: "
        "a rule imports another rule"
    ]


def test_a_private_module_is_imported_only_from_its_own_package(tmp_path):
    files = {
        **CLEAN,
        "scan/_tokens.py": "",
        "scan/walker.py": "from migrate.scan import _tokens\n",  # its own package: fine
        "fix/fixer.py": "from migrate.scan._tokens import split\n",
    }
    assert problems(_package(tmp_path, files)) == [
        "migrate.fix.fixer imports migrate.scan._tokens: a private module of scan/"
    ]


def private_names(root: Path) -> list[str]:
    """`from migrate.scan.engine import _helper` in another package: a private name used
    across packages (the owner makes it public, or it moves down)."""
    found = []
    for module, (path, _) in sorted(modules(root).items()):
        package = (module.split(".") + [""])[1]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom) or not (node.module or "").startswith(
                "migrate."
            ):
                continue
            if node.module.split(".")[1] == package:  # type: ignore[union-attr]
                continue
            for alias in node.names:
                if alias.name.startswith("_") and not alias.name.startswith("__"):
                    found.append(f"{module} imports {alias.name} from {node.module}")
    return found


def test_no_private_name_is_imported_from_another_package(tmp_path):
    assert private_names(PACKAGE) == []
    files = {
        **CLEAN,
        "scan/walker.py": "def _walk(): pass\n",
        "fix/fixer.py": "from migrate.scan.walker import _walk\n",
    }
    assert private_names(_package(tmp_path, files)) == [
        "migrate.fix.fixer imports _walk from migrate.scan.walker"
    ]


def test_a_module_loaded_by_name_is_an_import(tmp_path):
    late = (
        "import importlib\n"
        "def run(name):\n"
        "    importlib.import_module('migrate.fix.fixer')\n"
        "    importlib.import_module(f'migrate.scan.{name}')\n"  # the package: same stage
        "    importlib.import_module(name)\n"  # not a literal: not seen
        "    return __import__('json')\n"  # outside the package
    )
    root = _package(tmp_path, {**CLEAN, "scan/walker.py": late})
    assert imports(root)["migrate.scan.walker"] == {"migrate.fix.fixer", "migrate.scan"}
    assert problems(root) == [
        "migrate.scan.walker (scan) imports migrate.fix.fixer: fix is a later stage"
    ]


def test_the_architecture_page_lists_every_package_in_its_layer_in_order():
    page = (PACKAGE.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| (\w+) \| ((?:`[\w_]+`(?:, )?)+) \|", page, re.M)
    documented = {
        ("" if name == "__init__" else name): layer_name
        for layer_name, cell in rows
        for name in re.findall(r"`([\w_]+)`", cell)
    }
    assert documented == {package: NAMES[stage] for package, stage in LAYERS.items()}
    order = sorted({s for s in LAYERS.values() if s != VERIFY}) + [VERIFY]
    assert [layer_name for layer_name, _ in rows] == [NAMES[s] for s in order]
