"""Name resolution: every spelling of a TorchScript API is found once, with the right rule and
the fully qualified symbol; other `jit`s, text and shadowed names are not.

In-memory cases go through `check_source` (the scan's checks on one file); re-export cases
build small repositories and run the Scanner over them."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from migrate.pipeline.scan import PlannedScanner as Scanner
from migrate.registry import all_rules
from migrate.scan.engine import ScanOptions
from migrate.scan.file_analysis import check_source
from tests.scan_support import run_cli, write_tree

ALL = sorted(all_rules())


def found(source: str, path: str = "case.py") -> list[tuple[int, int, str, str]]:
    text = textwrap.dedent(source)
    return [(f.line, f.column, f.rule, f.symbol) for f in check_source(text, ALL, path)]


def at(source: str, line: int, snippet: str) -> int:
    """1-based column of `snippet` on `line` of the dedented source."""
    text = textwrap.dedent(source).splitlines()[line - 1]
    assert snippet in text, f"{snippet!r} not on line {line}: {text!r}"
    return text.index(snippet) + 1


def expect(source: str, *rows: tuple[int, str, str, str]) -> list[tuple[int, int, str, str]]:
    """rows: (line, snippet where the finding starts, rule, symbol)."""
    return sorted((line, at(source, line, snip), rule, sym) for line, snip, rule, sym in rows)


# --------------------------------------------------------------------------- import forms

IMPORT_FORMS = {
    "import torch": (
        """
        import torch
        m = torch.jit.script(model)
        """,
        [(3, "torch.jit.script(", "MIG101", "torch.jit.script")],
    ),
    "import torch as T": (
        """
        import torch as T
        m = T.jit.trace(model, x)
        """,
        [(3, "T.jit.trace(", "MIG102", "torch.jit.trace")],
    ),
    "import torch.jit": (
        """
        import torch.jit
        m = torch.jit.load("m.pt")
        """,
        [(3, "torch.jit.load(", "MIG202", "torch.jit.load")],
    ),
    "import torch.jit as J": (
        """
        import torch.jit as J
        m = J.freeze(model)
        """,
        [(3, "J.freeze(", "MIG116", "torch.jit.freeze")],
    ),
    "from torch import jit": (
        """
        from torch import jit
        jit.save(model, "m.pt")
        """,
        [(3, "jit.save(", "MIG201", "torch.jit.save")],
    ),
    "from torch.jit import script as S": (
        """
        from torch.jit import script as S

        @S
        def f(x):
            return x
        """,
        [(4, "S", "MIG101", "torch.jit.script")],
    ),
    "module-level alias": (
        """
        import torch
        script = torch.jit.script
        m = script(model)
        """,
        [
            (3, "torch.jit.script", "MIG101", "torch.jit.script"),
            (4, "script(model)", "MIG101", "torch.jit.script"),
        ],
    ),
    "alias of an alias": (
        """
        import torch.jit as J
        tracer = J
        run = tracer.trace
        run(model, x)
        """,
        [
            (4, "tracer.trace", "MIG102", "torch.jit.trace"),
            (5, "run(model, x)", "MIG102", "torch.jit.trace"),
        ],
    ),
    "function-local import": (
        """
        def export(model, x):
            from torch.jit import trace
            return trace(model, x)

        def other(model):
            import torch.jit as J
            return J.script(model)
        """,
        [
            (4, "trace(model, x)", "MIG102", "torch.jit.trace"),
            (8, "J.script(model)", "MIG101", "torch.jit.script"),
        ],
    ),
    "function-local import does not leak": (
        """
        def a():
            from torch.jit import trace

        def b(trace):
            return trace(1)

        trace(2)
        """,
        [],
    ),
    "mobile and private APIs": (
        """
        import torch
        from torch.utils import mobile_optimizer as mo
        from torch.jit.mobile import _load_for_lite_interpreter as load_lite
        mo.optimize_for_mobile(m)
        load_lite("m.ptl")
        torch._C._jit_pass_inline(graph)
        torch.jit._state.disable()
        """,
        [
            (
                5,
                "mo.optimize_for_mobile(",
                "MIG203",
                "torch.utils.mobile_optimizer.optimize_for_mobile",
            ),
            (6, "load_lite(", "MIG205", "torch.jit.mobile._load_for_lite_interpreter"),
            (7, "torch._C._jit_pass_inline(", "MIG119", "torch._C._jit_pass_inline"),
            (8, "torch.jit._state.disable()", "MIG119", "torch.jit._state.disable"),
        ],
    ),
    "roles: decorator, base, isinstance, subscript, reference": (
        """
        import torch
        from torch import jit

        class M(jit.ScriptModule):
            limit: jit.Final[int] = 3

            @jit.script_method
            def forward(self, x):
                return x

        def check(m):
            return isinstance(m, (jit.ScriptModule, int))

        handler = jit.TracerWarning
        """,
        [
            (5, "jit.ScriptModule", "MIG109", "torch.jit.ScriptModule"),
            (6, "jit.Final", "MIG112", "torch.jit.Final"),
            (8, "jit.script_method", "MIG106", "torch.jit.script_method"),
            (13, "jit.ScriptModule", "MIG109", "torch.jit.ScriptModule"),
            (15, "jit.TracerWarning", "MIG118", "torch.jit.TracerWarning"),
        ],
    ),
    "nested calls each once": (
        """
        import torch
        m = torch.jit.freeze(torch.jit.script(torch.jit.trace(model, x)))
        """,
        [
            (3, "torch.jit.freeze(", "MIG116", "torch.jit.freeze"),
            (3, "torch.jit.script(", "MIG101", "torch.jit.script"),
            (3, "torch.jit.trace(", "MIG102", "torch.jit.trace"),
        ],
    ),
    "methods spelled through the class, once each": (
        """
        import torch
        torch.jit.ScriptModule._save_for_lite_interpreter(m, "m.ptl")
        torch.jit.ScriptModule.save(m, "m.pt")
        """,
        [
            (
                3,
                "torch.jit.ScriptModule._save_for_lite_interpreter(",
                "MIG204",
                "torch.jit.ScriptModule._save_for_lite_interpreter",
            ),
            (4, "torch.jit.ScriptModule.save(", "MIG201", "torch.jit.ScriptModule.save"),
        ],
    ),
    "try/except ImportError shim": (
        """
        try:
            from torch.jit import script
        except ImportError:
            def script(fn):
                return fn

        @script
        def f(x):
            return x
        """,
        [(8, "script", "MIG101", "torch.jit.script")],
    ),
}


@pytest.mark.parametrize("name", list(IMPORT_FORMS))
def test_import_forms(name):
    source, rows = IMPORT_FORMS[name]
    assert found(source) == expect(source, *rows)


# --------------------------------------------------------------------------- negatives

NEGATIVES = {
    "comments": """
        import torch
        # torch.jit.script(model) used to be here
        x = 1  # torch.jit.trace(model, x)
        """,
    "strings and docstrings": '''
        """Module docstring: call torch.jit.script(model)."""
        import torch

        def f():
            """torch.jit.trace(model, x) is deprecated."""
            return "torch.jit.load('m.pt')", b"torch.jit.save"
        ''',
    "f-strings": """
        import torch
        name = "m"
        msg = f"run torch.jit.script({name}) then torch.jit.save({name!r})"
        """,
    "numba and jax": """
        import jax
        import numba
        from numba import jit

        @numba.jit(nopython=True)
        def f(x):
            return x

        @jit
        def g(x):
            return x

        h = jax.jit(lambda x: x)
        """,
    "self.jit and a class attribute": """
        import torch

        class Model:
            jit = None

            def go(self):
                return self.jit.script(self), self.jit.trace(self, 1)

        class Holder:
            jit = torch
            value = jit
        """,
    "a user's own jit variable and parameter": """
        import torch

        jit = make_compiler()
        jit.script(model)

        def compile(model, jit):
            return jit.trace(model)

        lam = lambda jit: jit.script(1)
        """,
    "local variable shadowing an imported name": """
        from torch.jit import script, trace
        import torch.jit as J

        def f(model):
            script = lambda m: m
            return script(model)

        def g(model, trace=None):
            return trace(model)

        def h(model):
            for J in compilers:
                J.load(model)
            with open_compiler() as script:
                script(model)
            try:
                pass
            except Exception as trace:
                trace(model)
            return [script(m) for script in compilers]
        """,
    "global and class scopes": """
        import torch

        class C:
            torch = None

            def m(self):
                return 1
        """,
    "annotation strings": """
        import torch

        def f(m: "torch.jit.ScriptModule") -> "torch.jit.ScriptFunction":
            x: "torch.jit.Final[int]" = 3
            return m
        """,
    "torch.jit alone and torch itself": """
        import torch
        import torch.jit
        print(torch.jit, torch.nn.Linear, torch.compile(model))
        """,
    "jit in other names": """
        import torch
        enable_jit = True
        jit_cache = {}
        def jitter(x):
            return torch.nn.functional.dropout(x)
        """,
}


@pytest.mark.parametrize("name", list(NEGATIVES))
def test_negatives(name):
    assert found(NEGATIVES[name]) == []


def test_real_code_inside_fstring_braces_is_reported():
    source = """
        import torch
        msg = f"{torch.jit.script(model)}"
        """
    assert found(source) == expect(source, (3, "torch.jit.script(", "MIG101", "torch.jit.script"))


def test_class_attribute_named_jit_does_not_hide_module_import():
    source = """
        from torch import jit

        class A:
            jit = None

            def go(self, m):
                return jit.script(m)
        """
    # Class bodies are not visible from their methods: this `jit` is torch.jit.
    assert found(source) == expect(source, (8, "jit.script(", "MIG101", "torch.jit.script"))


def test_global_statement_reaches_module_import():
    source = """
        from torch.jit import script

        def f(m):
            global script
            return script(m)
        """
    assert found(source) == expect(source, (6, "script(m)", "MIG101", "torch.jit.script"))


# --------------------------------------------------------------------------- re-exports


def scan_tree(root: Path, files: dict[str, str], *paths: str, jobs: int | None = 1):
    write_tree(root, files)
    options = ScanOptions(cache=False, jobs=jobs, use_git=False)
    result = Scanner(options).scan([str(root / p) for p in (paths or (".",))])
    assert result.errors == []
    return sorted(
        (Path(f.path).relative_to(root).as_posix(), f.line, f.rule, f.symbol)
        for f in result.findings
    )


PKG = {
    "pkg/__init__.py": "from .compat import script\n",
    "pkg/compat.py": """
        try:
            from torch.jit import script, trace
        except ImportError:
            def script(fn):
                return fn
        """,
}


def test_relative_reexport(tmp_path):
    got = scan_tree(
        tmp_path,
        {**PKG, "pkg/model.py": "from .compat import script\n\nnet = script(build())\n"},
    )
    assert got == [("pkg/model.py", 3, "MIG101", "torch.jit.script")]


def test_absolute_reexport_and_module_alias(tmp_path):
    got = scan_tree(
        tmp_path,
        {
            **PKG,
            "pkg/serve.py": """
                from pkg.compat import trace
                import pkg.compat as C
                from pkg import compat

                a = trace(model, x)
                b = C.script(model)
                c = compat.trace(model, x)
                """,
        },
    )
    assert got == [
        ("pkg/serve.py", 6, "MIG102", "torch.jit.trace"),
        ("pkg/serve.py", 7, "MIG101", "torch.jit.script"),
        ("pkg/serve.py", 8, "MIG102", "torch.jit.trace"),
    ]


def test_package_init_reexport(tmp_path):
    got = scan_tree(
        tmp_path,
        {
            **PKG,
            "app.py": """
                import pkg
                from pkg import script as S

                pkg.script(a)
                S(b)
                """,
        },
    )
    assert got == [
        ("app.py", 5, "MIG101", "torch.jit.script"),
        ("app.py", 6, "MIG101", "torch.jit.script"),
    ]


def test_two_hop_chain_through_a_file_without_jit_text(tmp_path):
    files = {
        **PKG,
        "pkg/utils.py": "from .compat import script as compile_fn\n\nHELPERS = [compile_fn]\n",
        "pkg/model.py": """
            from pkg.utils import compile_fn

            def build(m):
                return compile_fn(m)
            """,
    }
    assert "jit" not in files["pkg/utils.py"] and "jit" not in files["pkg/model.py"]
    got = scan_tree(tmp_path, files)
    assert got == [
        ("pkg/model.py", 5, "MIG101", "torch.jit.script"),
        # The helper list holds the API itself: a reference, reported once.
        ("pkg/utils.py", 3, "MIG101", "torch.jit.script"),
    ]


def test_reexported_module_alias(tmp_path):
    got = scan_tree(
        tmp_path,
        {
            "lib/__init__.py": "",
            "lib/backend.py": "import torch.jit as engine\nload = engine.load\n",
            "lib/use.py": "from lib.backend import engine, load\nengine.save(m, 'p')\nload('p')\n",
        },
    )
    assert got == [
        ("lib/backend.py", 2, "MIG202", "torch.jit.load"),
        ("lib/use.py", 2, "MIG201", "torch.jit.save"),
        ("lib/use.py", 3, "MIG202", "torch.jit.load"),
    ]


def test_script_folder_sibling_import(tmp_path):
    # `python tools/export.py` puts tools/ on sys.path: `from common import ...` is tools/common.py.
    files = {
        "tools/common.py": "from torch.jit import load as load_model\n",
        "tools/export.py": "from common import load_model\n\nm = load_model('m.pt')  # jit\n",
    }
    expected = [("tools/export.py", 3, "MIG202", "torch.jit.load")]
    assert scan_tree(tmp_path / "a", files) == expected
    assert scan_tree(tmp_path / "b", files, "tools") == expected


def test_reexport_shadowed_locally_is_not_reported(tmp_path):
    got = scan_tree(
        tmp_path,
        {
            **PKG,
            "pkg/model.py": """
                from pkg.compat import script

                def f(m):
                    script = make_compiler()
                    return script(m)
                """,
        },
    )
    assert got == []


def test_same_name_from_a_module_without_torch_is_not_reported(tmp_path):
    got = scan_tree(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/compilers.py": "def script(f):\n    return f\njit = object()\n",
            "pkg/model.py": "from pkg.compilers import script, jit\nscript(m)\njit.script(m)\n",
        },
    )
    assert got == []


def test_star_import_hands_on_what_the_module_exports(tmp_path):
    # timm/layers/create_norm_act.py uses `torch` from `from .evo_norm import *`.
    got = scan_tree(
        tmp_path,
        {
            **PKG,
            "pkg/norms.py": "import torch\nfrom torch.jit import trace as capture\n",
            "pkg/build.py": """
                from .norms import *

                def build(layer, x):
                    a = torch.jit.script(layer)
                    return capture(layer, x)
                """,
            "pkg/other.py": "from .empty import *\n\nb = capture(m, x)\n",
            "pkg/empty.py": "capture = print\n",
        },
    )
    assert got == [
        ("pkg/build.py", 5, "MIG101", "torch.jit.script"),
        ("pkg/build.py", 6, "MIG102", "torch.jit.trace"),
    ]


def test_star_import_without_the_module_still_means_torch_for_torch():
    # One file named alone (pre-commit): the star-imported module is not read.
    source = """
        from .common import *

        m = torch.jit.script(model)
        jit.script(model)
        """
    assert found(source) == expect(source, (4, "torch.jit.script(", "MIG101", "torch.jit.script"))


def test_reexports_through_the_process_pool(tmp_path):
    files = dict(PKG)
    for i in range(60):
        files[f"pkg/mod{i:02d}.py"] = f"from pkg import script\n\nnet{i} = script(build())\n"
    got = scan_tree(tmp_path, files, jobs=2)
    assert got == [(f"pkg/mod{i:02d}.py", 3, "MIG101", "torch.jit.script") for i in range(60)]


def test_one_named_file_reads_the_modules_it_imports(tmp_path, monkeypatch):
    # The shim and the middle module lie outside the scanned path; they are read for their
    # exports and never reported.
    files = {
        **PKG,
        "pkg/utils.py": "from .compat import script as compile_fn\n",
        "pkg/model.py": "from .utils import compile_fn\n\nnet = compile_fn(build())\n",
    }
    write_tree(tmp_path, files)
    monkeypatch.chdir(tmp_path / "pkg")  # not the repository's top: roots come from packages
    result = Scanner(ScanOptions(cache=False, jobs=1, use_git=False)).scan(["model.py"])
    assert result.errors == []
    assert [(f.path, f.line, f.rule, f.symbol) for f in result.findings] == [
        ("model.py", 3, "MIG101", "torch.jit.script")
    ]


def _scan_named(tmp_path, monkeypatch, files, named):
    """Findings (path, line, rule, symbol) of a scan of one named file, and the modules
    outside it that the scan read."""
    write_tree(tmp_path, files)
    monkeypatch.chdir(tmp_path)
    scanner = Scanner(ScanOptions(cache=False, jobs=1, use_git=False))
    result = scanner.scan([named])
    found = [(f.path, f.line, f.rule, f.symbol) for f in result.findings]
    return found, sorted(Path(p).relative_to(tmp_path).as_posix() for p in scanner._outside_read)


def test_one_named_file_follows_only_module_level_imports_of_the_modules_it_reads(
    tmp_path, monkeypatch
):
    # Only module-level names are re-exported, so an import inside a function of a module read
    # for its exports leads nowhere a name could come from: that module is not read. A named
    # file asks for the names it uses: the modules on their re-export chains are read (the
    # package's __init__ among them: it could re-export `pkg.utils`), nothing else.
    files = {
        **PKG,
        "pkg/utils.py": (
            "from .compat import script as compile_fn\n\n"
            "def later():\n    from . import heavy\n    return heavy\n"
        ),
        "pkg/heavy.py": "import torch\nrun = torch.jit.trace\n",
        "pkg/model.py": "from .utils import compile_fn\n\nnet = compile_fn(build())\n",
    }
    found, read = _scan_named(tmp_path, monkeypatch, files, "pkg/model.py")
    assert found == [("pkg/model.py", 3, "MIG101", "torch.jit.script")]
    assert read == ["pkg/__init__.py", "pkg/compat.py", "pkg/utils.py"]


def test_one_named_file_reads_only_the_chains_of_the_names_it_uses(tmp_path, monkeypatch):
    # utils imports (at module level) modules that re-export nothing the named file uses, and
    # they import more: a pre-commit run reads the chain of `compile_fn`, not the package.
    files = {
        **PKG,
        "pkg/utils.py": (
            "from .compat import script as compile_fn\nfrom . import heavy\n"
            "from .heavy import run as tracer\n"
        ),
        "pkg/heavy.py": "import torch\n\nfrom . import deeper\n\nrun = torch.jit.trace\n",
        "pkg/deeper.py": "from .compat import trace\n",
        "pkg/model.py": "from . import utils\n\nnet = utils.compile_fn(build())\n",
    }
    found, read = _scan_named(tmp_path, monkeypatch, files, "pkg/model.py")
    assert found == [("pkg/model.py", 3, "MIG101", "torch.jit.script")]
    assert read == ["pkg/__init__.py", "pkg/compat.py", "pkg/utils.py"]
    # The whole package scanned finds the same, reading nothing outside.
    whole = Scanner(ScanOptions(cache=False, jobs=1, use_git=False))
    found = [(f.path, f.line, f.rule) for f in whole.scan(["pkg"]).findings]
    assert ("pkg/model.py", 3, "MIG101") in found


def test_module_only_tables_export_what_full_tables_do():
    # Every Python file of the fixtures: the export table from the module-level walk equals
    # the one from the full walk, and its imports are the full table's module-level ones.
    import ast

    from migrate.analysis.pyscope import ScopeTable

    root = Path(__file__).resolve().parent.parent / "fixtures"
    compared = 0
    for path in sorted(root.rglob("*.py")):
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError, ValueError):
            continue
        full = ScopeTable(tree, "pkg.mod", False)
        light = ScopeTable(tree, "pkg.mod", False, module_only=True)
        assert light.module_exports() == full.module_exports(), path
        assert light.repo_imports <= full.repo_imports, path
        compared += 1
    assert compared > 100


def test_binding_targets_without_a_full_walk_binds_what_the_walk_binds():
    """ScopeTable._bind_target takes `x` and `a.b.c` targets without walking them; on every
    assignment, loop, with and walrus target of the fixtures it binds what a walk binds."""
    import ast as _ast
    from pathlib import Path as _Path

    from migrate.analysis.pyscope import Scope, ScopeTable

    def walked(target):
        return {
            n.id
            for n in _ast.walk(target)
            if isinstance(n, _ast.Name) and isinstance(n.ctx, _ast.Store)
        }

    table = ScopeTable(_ast.parse(""), "m", False)
    compared = 0
    for path in sorted((_Path(__file__).resolve().parent.parent / "fixtures").rglob("*.py")):
        try:
            tree = _ast.parse(path.read_text(encoding="utf-8", errors="replace"))
        except (SyntaxError, ValueError):
            continue
        for node in _ast.walk(tree):
            targets = getattr(node, "targets", None) or [
                t
                for t in (getattr(node, "target", None), getattr(node, "optional_vars", None))
                if isinstance(t, _ast.AST)
            ]
            for target in targets:
                scope = Scope(tree, None, "module")
                table._bind_target(scope, target)
                assert scope.locals == walked(target), (path, _ast.dump(target)[:60])
                compared += 1
    assert compared > 1000


def test_a_global_statement_at_module_level_changes_nothing(tmp_path):
    # `global` at module level is legal and does nothing; name lookup used to go round the
    # module scope forever (the scan never ended). Run in a subprocess: a hang fails here.
    write_tree(
        tmp_path,
        {
            "a.py": """\
                import torch

                global s
                s = torch.jit.script
                m = s(torch.nn.Linear(2, 2))
                """
        },
    )
    run = run_cli(["scan", "a.py", "--no-cache", "--format", "json"], cwd=tmp_path)
    assert run.code == 1, run.stderr
    found = [(f["line"], f["rule"]) for f in run.json()["findings"]]
    assert found == [(4, "MIG101"), (5, "MIG101")]
