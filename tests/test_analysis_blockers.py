"""Blockers: @torch.jit.ignore / @torch.jit.unused methods reachable from a captured forward."""

from __future__ import annotations

from tests.analysis_support import Tree

LAYERS = """
import torch
from torch import jit as J
from torch import nn


class Base(nn.Module):
    @torch.jit.ignore
    def to_numpy(self, x):
        return x.numpy()

    def shared(self, x):
        return x


class Encoder(Base):
    def forward(self, x):
        return self.helper(x)

    def helper(self, x):
        self.to_numpy(x)
        return super().shared(x)

    @J.unused
    def never_called(self, x):
        return x

    @torch.jit.ignore(drop=True)
    def dropped(self, x):
        return x


class Plain(nn.Module):
    def forward(self, x):
        return x + 1


class Wrapper(nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = Inner()

    def forward(self, x):
        return self.inner(x)


class Inner(nn.Module):
    def forward(self, x):
        return self.drop(x)

    @J.unused
    def drop(self, x):
        return x
"""


def blockers(tree: Tree, display: str, snippet: str, nth: int = 0):
    found = tree.facts.capture_blockers(*tree.at(display, snippet, nth))
    return [(b.display, b.line, b.method, b.decorator, b.via) for b in found]


def test_imported_class_blockers_through_base_and_helper(tmp_path):
    tree = Tree(
        tmp_path,
        {
            "pkg/__init__.py": "from .layers import Encoder as PublicEncoder\n",
            "pkg/layers.py": LAYERS,
            "export.py": """
                import torch
                import pkg.layers as L
                from pkg import PublicEncoder
                from pkg.layers import Plain

                a = torch.jit.script(L.Encoder())
                model = PublicEncoder().eval()
                b = torch.jit.trace(model, torch.ones(1))
                c = torch.jit.script(Plain())
            """,
        },
    )
    line = tree.at("pkg/layers.py", "def to_numpy")[1]
    expected = [
        ("pkg/layers.py", line, "to_numpy", "torch.jit.ignore", ("forward", "helper", "to_numpy"))
    ]
    assert blockers(tree, "export.py", "torch.jit.script") == expected
    assert blockers(tree, "export.py", "torch.jit.trace") == expected
    assert blockers(tree, "export.py", "torch.jit.script", 1) == []
    captured = tree.facts.class_of_capture(*tree.at("export.py", "torch.jit.trace"))
    assert (captured.display, captured.class_name) == ("pkg/layers.py", "Encoder")
    assert captured.forward.start == tree.at("pkg/layers.py", "def forward")
    reached = {(m.class_name, m.method) for m in captured.methods}
    assert reached == {
        ("Encoder", "forward"),
        ("Encoder", "helper"),
        ("Base", "to_numpy"),
        ("Base", "shared"),
    }


def test_submodule_forward_and_decorator_aliases(tmp_path):
    tree = Tree(
        tmp_path,
        {
            "layers.py": LAYERS,
            "factory.py": """
                from layers import Wrapper

                def build_model():
                    model = Wrapper()
                    return model.eval()
            """,
            "export.py": """
                import torch
                from factory import build_model

                def build():
                    net = build_model()
                    return torch.jit.script(net)
            """,
        },
    )
    assert blockers(tree, "export.py", "torch.jit.script") == [
        (
            "layers.py",
            tree.at("layers.py", "def drop(")[1],
            "drop",
            "J.unused",
            ("forward", "inner.forward", "drop"),
        )
    ]


def test_drop_decorator_in_same_file(tmp_path):
    source = LAYERS.replace("return self.helper(x)", "return self.dropped(x)")
    source += "\nscripted = torch.jit.script(Encoder())\n"
    tree = Tree(tmp_path, {"layers.py": source})
    assert blockers(tree, "layers.py", "torch.jit.script") == [
        (
            "layers.py",
            tree.at("layers.py", "def dropped")[1],
            "dropped",
            "torch.jit.ignore(drop=True)",
            ("forward", "dropped"),
        )
    ]


def test_nothing_to_say_outside_the_repository(tmp_path):
    tree = Tree(
        tmp_path,
        {
            "export.py": """
                import torch
                import torchvision

                def f(x):
                    return x

                a = torch.jit.script(torchvision.models.resnet18())
                b = torch.jit.script(f)
                c = torch.jit.trace(load_model(), x)
            """,
            "local.py": """
                import torch

                class Shadow:
                    @torch.jit.ignore
                    def forward(self, x):
                        return x

                def g(Shadow):
                    return torch.jit.script(Shadow())

                class Other(torch.nn.Module):
                    def forward(self, x):
                        return x

                def pick(flag):
                    if flag:
                        return Other()
                    return Shadow()

                h = torch.jit.script(pick(True))
            """,
        },
    )
    for nth in range(2):
        where = tree.at("export.py", "torch.jit.script", nth)
        assert tree.facts.class_of_capture(*where) is None
        assert tree.facts.capture_blockers(*where) == []
    assert tree.facts.class_of_capture(*tree.at("export.py", "torch.jit.trace")) is None
    for nth in range(2):
        assert tree.facts.class_of_capture(*tree.at("local.py", "torch.jit.script", nth)) is None


def test_forward_itself_ignored_and_name_bound_to_instance(tmp_path):
    tree = Tree(
        tmp_path,
        {
            "m.py": """
                import torch
                from torch.jit import ignore


                class Net(torch.nn.Module):
                    @ignore
                    def forward(self, x):
                        return x.numpy()


                net = Net()
                traced = torch.jit.trace(net, torch.ones(1))
            """,
        },
    )
    assert blockers(tree, "m.py", "torch.jit.trace") == [
        ("m.py", 7, "forward", "ignore", ("forward",))
    ]
