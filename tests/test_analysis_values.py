"""Value flow: uses of a module-level or self.attr capture outside the scope that binds it."""

from __future__ import annotations

from tests.analysis_support import Tree

ENCODERS = """
import torch

encoder = torch.jit.trace(Encoder(), torch.ones(1, 3))
scripted = torch.jit.freeze(torch.jit.script(Decoder()).eval())
encoder(torch.ones(1, 3))  # module level: the per-scope analysis sees this one


def describe():
    return encoder.code


def rebind():
    encoder = object()
    return encoder


def param(encoder):
    return encoder
"""


def uses(tree: Tree, display: str, snippet: str) -> list[tuple[str, int, str, str | None]]:
    found = tree.facts.external_uses(*tree.at(display, snippet))
    return [(u.span.display, u.span.line, u.kind, u.attribute) for u in found]


def test_module_capture_used_in_other_modules(tmp_path):
    tree = Tree(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/encoders.py": ENCODERS,
            "pkg/serve.py": """
                from pkg.encoders import encoder as enc
                import pkg.encoders as E
                import pkg.encoders


                def run(batch):
                    out = enc(batch)
                    graph = E.encoder.graph
                    keep(pkg.encoders.encoder)
                    return enc
            """,
            "pkg/sub/__init__.py": "",
            "pkg/sub/tools.py": """
                from .. import encoders
                from ..encoders import encoder

                print(encoders.encoder.inlined_graph)
                encoder.save("enc.pt")
            """,
        },
    )
    got = uses(tree, "pkg/encoders.py", "torch.jit.trace")
    assert got == [
        ("pkg/encoders.py", 9, "attribute", "code"),
        ("pkg/serve.py", 1, "import", None),
        ("pkg/serve.py", 7, "call", None),
        ("pkg/serve.py", 8, "attribute", "graph"),
        ("pkg/serve.py", 9, "argument", None),
        ("pkg/serve.py", 10, "returned", None),
        ("pkg/sub/tools.py", 2, "import", None),
        ("pkg/sub/tools.py", 4, "attribute", "inlined_graph"),
        ("pkg/sub/tools.py", 5, "attribute", "save"),
    ]
    only = tree.facts.torchscript_only_uses(*tree.at("pkg/encoders.py", "torch.jit.trace"))
    assert [u.attribute for u in only] == ["code", "graph", "inlined_graph", "save"]
    capture = tree.facts.capture_at(*tree.at("pkg/encoders.py", "torch.jit.trace"))
    assert (capture.binding, capture.qualname) == ("module", "pkg.encoders.encoder")


def test_chained_capture_is_bound_and_unused_elsewhere(tmp_path):
    tree = Tree(tmp_path, {"pkg/__init__.py": "", "pkg/encoders.py": ENCODERS})
    capture = tree.facts.capture_at(*tree.at("pkg/encoders.py", "torch.jit.script"))
    assert (capture.binding, capture.name) == ("module", "scripted")
    assert capture.uses == []
    # The freeze call wrapping the capture finds the same record.
    assert tree.facts.capture_at(*tree.at("pkg/encoders.py", "torch.jit.freeze")) is capture


def test_package_re_export_and_star_import(tmp_path):
    tree = Tree(
        tmp_path,
        {
            "pkg/__init__.py": "from .encoders import encoder\n",
            "pkg/encoders.py": ENCODERS,
            "app.py": """
                from pkg import encoder


                def main(x):
                    return encoder(x)
            """,
            "star.py": "from pkg.encoders import *\n",
        },
    )
    got = uses(tree, "pkg/encoders.py", "torch.jit.trace")
    assert ("app.py", 5, "returned", None) not in got  # the call, not the return, is the use
    assert ("app.py", 5, "call", None) in got
    assert ("app.py", 1, "import", None) in got
    assert ("pkg/__init__.py", 1, "import", None) in got
    assert ("star.py", 1, "other", "*") in got


def test_unrelated_names_are_not_uses(tmp_path):
    tree = Tree(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/encoders.py": ENCODERS,
            "other.py": """
                import torch

                encoder = torch.nn.Linear(2, 2)


                def f(x):
                    return encoder(x)


                def g(encoder):
                    return encoder.code
            """,
            "late.py": """
                def f():
                    from pkg.encoders import encoder
                    encoder = 3
                    return encoder
            """,
        },
    )
    got = uses(tree, "pkg/encoders.py", "torch.jit.trace")
    # The import in late.py is reported; its rebound name is not the capture any more.
    assert got == [("late.py", 2, "import", None), ("pkg/encoders.py", 9, "attribute", "code")]


def test_self_attribute_capture(tmp_path):
    tree = Tree(
        tmp_path,
        {
            "service.py": """
                import torch


                class Service:
                    def __init__(self, model):
                        self.model = torch.jit.script(model)
                        self.model.eval()

                    def __call__(self, x):
                        return self.model(x)

                    def dump(self):
                        return self.model.graph

                    def unrelated(self, other):
                        return other.model.code


                class Other:
                    def f(self):
                        return self.model.code
            """,
        },
    )
    capture = tree.facts.capture_at(*tree.at("service.py", "torch.jit.script"))
    assert (capture.binding, capture.qualname) == ("attribute", "service.Service.model")
    got = [(u.span.start, u.kind, u.attribute) for u in capture.uses]
    assert got == [
        (tree.at("service.py", "self.model", 1), "attribute", "eval"),
        (tree.at("service.py", "self.model", 2), "call", None),
        (tree.at("service.py", "self.model", 3), "attribute", "graph"),
    ]
    assert [u.attribute for u in capture.torchscript_only_uses] == ["graph"]


def test_local_capture_is_not_followed_and_trace_counts(tmp_path):
    tree = Tree(
        tmp_path,
        {
            "export.py": """
                import warnings
                import torch
                from torch.jit import trace as T

                warnings.filterwarnings("ignore", category=torch.jit.TracerWarning)


                def export(m, x):
                    traced = torch.jit.trace(m, x)
                    other = T(m, x)
                    mod = torch.jit.trace_module(m, {"forward": x})
                    return traced, other, mod
            """,
            "clean.py": "import torch\nm = torch.jit.script(Net())\n",
        },
    )
    capture = tree.facts.capture_at(*tree.at("export.py", "torch.jit.trace("))
    assert (capture.binding, capture.name, capture.uses) == ("local", "traced", [])
    assert tree.facts.external_uses(*tree.at("export.py", "traced")) == []
    assert tree.facts.trace_calls_in("export.py") == 3
    assert tree.facts.trace_calls_in("clean.py") == 0
    assert tree.facts.trace_calls_in("missing.py") == 0
