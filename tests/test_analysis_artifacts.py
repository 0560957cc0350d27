"""Artifact flow: TorchScript archive producers and consumers linked through their paths."""

from __future__ import annotations

import ast
import subprocess
import sys

from migrate.facts import SourceFile, build_facts
from tests.analysis_support import Tree

PATHS = """
import os
from pathlib import Path

ARTIFACTS = os.path.join(os.path.dirname(__file__), "artifacts")
RANKER_PATH = os.path.join(ARTIFACTS, "ranker.pt")
ENCODER_PATH = Path(ARTIFACTS) / "encoder.pt"
"""


def keys(tree: Tree, role: str) -> dict[tuple[str, int, int], str | None]:
    return {s.span.start: s.key for s in tree.facts.sites if s.role == role}


def test_constant_from_a_third_module_links_save_and_load(tmp_path):
    tree = Tree(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/paths.py": PATHS,
            "pkg/export.py": """
                import torch
                from pkg.paths import RANKER_PATH
                from .model import Ranker

                def main():
                    scripted = torch.jit.script(Ranker())
                    torch.jit.save(scripted, RANKER_PATH)
            """,
            "pkg/serve.py": """
                import torch
                import pkg.paths as P

                model = torch.jit.load(P.RANKER_PATH, map_location="cpu")
            """,
        },
    )
    facts = tree.facts
    consumer = facts.site_at(*tree.at("pkg/serve.py", "torch.jit.load"))
    producer = facts.site_at(*tree.at("pkg/export.py", "torch.jit.save"))
    assert consumer is not None and producer is not None
    assert consumer.key == producer.key == "pkg/artifacts/ranker.pt"
    assert facts.producers_of(consumer) == [producer]
    assert facts.consumers_of(producer) == [consumer]
    # The extension lives in one literal of pkg/paths.py, shared by both sites.
    assert producer.path_def == consumer.path_def
    assert producer.path_def.start == tree.at("pkg/paths.py", '"ranker.pt"')
    assert producer.path_def.end_column - producer.path_def.column == len('"ranker.pt"')
    assert producer.path_shared == 2


def test_relative_imports_re_exports_and_path_operators(tmp_path):
    tree = Tree(
        tmp_path,
        {
            "pkg/__init__.py": "from .paths import ENCODER_PATH, ARTIFACTS\n",
            "pkg/paths.py": PATHS,
            "pkg/sub/__init__.py": "",
            "pkg/sub/export.py": """
                import torch
                from .. import paths
                from ..paths import ARTIFACTS

                def a(m):
                    m = torch.jit.trace(m, x)
                    m.save(paths.ENCODER_PATH)

                def b(m):
                    torch.jit.save(torch.jit.script(m), ARTIFACTS + "/enc" + ".pt")

                def c(m, name):
                    target = f"{ARTIFACTS}/other.pt"
                    torch.jit.save(torch.jit.script(m), target)
            """,
            "pkg/serve.py": """
                import os
                import torch
                from pathlib import Path
                from pkg import ENCODER_PATH, ARTIFACTS

                a = torch.jit.load(ENCODER_PATH)
                b = torch.jit.load(os.path.join(ARTIFACTS, "enc.pt"))
                c = torch.jit.load(str(Path(ARTIFACTS).joinpath("other.pt")))
                d = torch.jit.load(Path(ARTIFACTS, "x.pth").with_suffix(".pt").with_name("other.pt"))
            """,
        },
    )
    got = keys(tree, "producer")
    assert got[tree.at("pkg/sub/export.py", "m.save")] == "pkg/artifacts/encoder.pt"
    assert got[tree.at("pkg/sub/export.py", "torch.jit.save", 0)] == "pkg/artifacts/enc.pt"
    assert got[tree.at("pkg/sub/export.py", "torch.jit.save", 1)] == "pkg/artifacts/other.pt"
    loads = keys(tree, "consumer")
    assert sorted(loads.values()) == [
        "pkg/artifacts/enc.pt",
        "pkg/artifacts/encoder.pt",
        "pkg/artifacts/other.pt",
        "pkg/artifacts/other.pt",
    ]
    for consumer in tree.facts.consumers:
        assert len(tree.facts.producers_of(consumer)) == 1


def test_unknown_paths_have_no_key_and_link_to_nothing(tmp_path):
    tree = Tree(
        tmp_path,
        {
            "export.py": """
                import io
                import sys
                import argparse
                import torch

                parser = argparse.ArgumentParser()
                args = parser.parse_args()
                m = torch.jit.script(Net())
                torch.jit.save(m, sys.argv[1])
                torch.jit.save(m, args.out)

                def write(m, path):
                    torch.jit.save(m, path)

                for name in ("a.pt", "b.pt"):
                    torch.jit.save(m, name)

                with io.BytesIO() as fh:
                    torch.jit.save(m, fh)
            """,
            "load.py": """
                import sys
                import torch
                model = torch.jit.load(sys.argv[1])
            """,
        },
    )
    facts = tree.facts
    assert len(facts.producers) == 5
    assert all(s.key is None and s.path_def is None for s in facts.sites)
    consumer = facts.consumers[0]
    assert facts.producers_of(consumer) == []
    assert len(facts.unknown_producers) == 5


def test_file_objects_opened_on_a_path(tmp_path):
    tree = Tree(
        tmp_path,
        {
            "app.py": """
                import io
                import torch
                from pathlib import Path

                def export(m):
                    with open("model.pt", "wb") as fh:
                        torch.jit.save(m, fh)

                def serve_path():
                    with Path("model.pt").open("rb") as fh:
                        return torch.jit.load(fh)

                def serve_io():
                    with io.open("model.pt", "rb") as fh:
                        return torch.jit.load(fh)

                def serve_wrapped():
                    with open("model.pt", "rb") as fh:
                        fh = wrap(fh)
                        return torch.jit.load(fh)
            """,
        },
    )
    assert [s.key for s in tree.facts.sites] == ["model.pt", "model.pt", "model.pt", None]


def test_different_files_get_different_keys(tmp_path):
    tree = Tree(
        tmp_path,
        {
            "export.py": """
                import torch
                torch.jit.save(torch.jit.script(A()), "models/a.pt")
                torch.jit.save(torch.jit.script(B()), "models/b.pt")
            """,
            "load.py": """
                import torch
                a = torch.jit.load("models/./a.pt")
                c = torch.jit.load("models/c.pt")
            """,
        },
    )
    facts = tree.facts
    a = facts.site_at(*tree.at("load.py", "torch.jit.load", 0))
    c = facts.site_at(*tree.at("load.py", "torch.jit.load", 1))
    assert a.key == "models/a.pt"
    assert [p.key for p in facts.producers_of(a)] == ["models/a.pt"]
    assert facts.producers_of(c) == []
    save_a, save_b = facts.producers
    assert save_a.key != save_b.key
    assert save_a.path_shared == save_b.path_shared == 1


def test_save_methods_only_on_torchscript_values(tmp_path):
    tree = Tree(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/models.py": """
                import torch
                encoder = torch.jit.trace(Encoder(), x).eval()
            """,
            "pkg/run.py": """
                import torch
                from torch.utils.mobile_optimizer import optimize_for_mobile
                from PIL import Image
                from pkg.models import encoder

                img = Image.open("in.png")
                img.save("out.pt")
                torch.save(state, "weights.pt")

                loaded = torch.jit.load("a.pt")
                loaded.save("b.pt")
                encoder.save("enc.pt")
                frozen = torch.jit.freeze(torch.jit.script(Net()))
                frozen.save("frozen.pt")
                optimize_for_mobile(frozen)._save_for_lite_interpreter("frozen.ptl")

                class Holder:
                    def __init__(self):
                        self.module = torch.jit.script(Net())
                        self.other = Other()

                    def dump(self):
                        self.module.save("held.pt")
                        self.other.save("not_ours.pt")

                def shadowed(loaded):
                    loaded.save("param.pt")

                def left_for_review(m, x):
                    try:
                        out = torch.jit.trace(m, x)
                    except RuntimeError:
                        out = torch.jit.script(m)
                    out.save("classifier.pt")
            """,
        },
    )
    producers = {s.key: s.api for s in tree.facts.producers}
    assert producers == {
        "classifier.pt": "ScriptModule.save",
        "b.pt": "ScriptModule.save",
        "enc.pt": "ScriptModule.save",
        "frozen.pt": "ScriptModule.save",
        "frozen.ptl": "ScriptModule._save_for_lite_interpreter",
        "held.pt": "ScriptModule.save",
    }
    assert [s.lite for s in tree.facts.producers].count(True) == 1


def test_a_lite_writer_alone_in_its_file_is_a_producer(tmp_path):
    # No other archive call spells `save` or `load` here: the text gate must still let the
    # file through (`\bsave\b` does not match inside `_save_for_lite_interpreter`).
    tree = Tree(
        tmp_path,
        {
            "export_mobile.py": """
                import torch

                net = torch.jit.script(Net())
                net._save_for_lite_interpreter("net.ptl")
            """,
        },
    )
    assert [(s.api, s.key) for s in tree.facts.producers] == [
        ("ScriptModule._save_for_lite_interpreter", "net.ptl")
    ]


def test_lite_interpreter_consumers_and_aliases(tmp_path):
    tree = Tree(
        tmp_path,
        {
            "app.py": """
                import torch.jit as J
                from torch.jit.mobile import _load_for_lite_interpreter as lite_load
                from torch.jit import load

                a = J._load_for_lite_interpreter("m.ptl")
                b = lite_load("m.ptl")
                c = load("m.pt")

                def load(path):  # shadows the import below this line only at call time
                    return path

                def f():
                    def load(p):
                        return p
                    return load("local.pt")
            """,
        },
    )
    consumers = tree.facts.consumers
    assert [(s.api, s.key) for s in consumers] == [
        ("torch.jit._load_for_lite_interpreter", "m.ptl"),
        ("torch.jit.mobile._load_for_lite_interpreter", "m.ptl"),
        ("torch.jit.load", "m.pt"),
    ]


def test_shadowed_constant_and_names_bound_in_scope(tmp_path):
    tree = Tree(
        tmp_path,
        {
            "paths.py": 'MODEL = "model.pt"\nOUT = "out.pt"\n\ndef configure(args):\n    global OUT\n    OUT = args.out\n',
            "run.py": """
                import torch
                from paths import MODEL, OUT

                def set_by_configure():
                    return torch.jit.load(OUT)

                def local_shadow():
                    MODEL = "other.pt"
                    return torch.jit.load(MODEL)

                def imported():
                    return torch.jit.load(MODEL)

                def rebound():
                    p = "first.pt"
                    torch.jit.load(p)
                    p = "second.pt"
                    return torch.jit.load(p)

                def branch(flag):
                    if flag:
                        p = "x.pt"
                    else:
                        p = "y.pt"
                    return torch.jit.load(p)
            """,
        },
    )
    got = [s.key for s in tree.facts.consumers]
    assert got == [None, "other.pt", "model.pt", "first.pt", "second.pt", None]


def test_unresolved_folder_stays_symbolic_but_file_name_must_be_known(tmp_path):
    tree = Tree(
        tmp_path,
        {
            "cfg.py": """
                import os
                from settings import BASE
                ROOT = find_root()
                OUT = os.environ.get("OUT_DIR", "out")
                WHOLE = find_model()
            """,
            "a.py": """
                import os
                import torch
                import cfg
                torch.jit.save(m, os.path.join(cfg.ROOT, "r.pt"))
                torch.jit.save(m, cfg.OUT + "/o.pt")
                torch.jit.save(m, f"{cfg.BASE}/b.pt")
                torch.jit.save(m, cfg.WHOLE)
                torch.jit.save(m, os.environ["MODEL"])
            """,
            "b.py": """
                import torch
                from cfg import ROOT, OUT
                torch.jit.load(f"{ROOT}/r.pt")
                torch.jit.load(OUT + "/o.pt")
            """,
        },
    )
    assert [s.key for s in tree.facts.producers] == [
        "{cfg.ROOT}/r.pt",
        "$OUT_DIR/o.pt",
        "{settings.BASE}/b.pt",
        None,
        None,
    ]
    for consumer in tree.facts.consumers:
        assert len(tree.facts.producers_of(consumer)) == 1


def test_columns_count_characters_not_bytes(tmp_path):
    tree = Tree(
        tmp_path,
        {"app.py": 'import torch\nnom = "é"; m = torch.jit.load("é.pt")\n'},
    )
    site = tree.facts.consumers[0]
    assert site.span.start == tree.at("app.py", "torch.jit.load")
    assert site.path.start == tree.at("app.py", '"é.pt"')
    assert site.path.end_column == site.path.column + len('"é.pt"')


def test_build_facts_takes_parsed_files():
    text = 'import torch\nm = torch.jit.load("x.pt")\n'
    facts = build_facts([SourceFile("app.py", "app", text, ast.parse(text))])
    assert [(s.span.start, s.key) for s in facts.sites] == [(("app.py", 2, 5), "x.pt")]


def test_no_torch_import(tmp_path):
    (tmp_path / "a.py").write_text('import torch\ntorch.jit.save(torch.jit.script(m), "a.pt")\n')
    code = (
        "import sys; from migrate.facts import build_facts; "
        f"assert len(build_facts({str(tmp_path)!r}).sites) == 1; "
        "assert 'torch' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
