"""Issue 32: the archive audit's false positives on scripted timm models, narrowed without
opening a way round it.

Scripted ViT, DeiT and Swin archives were refused ("a module used as a value") for two
readings of the audit that TorchScript does not share: a local named in one function was
taken for the module alias another function binds to the same name (``_5``), and an enum
member the archive defines (``_0 = __torch__.timm.layers.format.Format.NHWC``) was taken
for a module. Each test of the other direction keeps a real way round the checks refused.
"""

from __future__ import annotations

import re
import signal
import warnings
import zipfile
from enum import Enum
from pathlib import Path

import pytest

from migrate.verify import audit

pytestmark = pytest.mark.verify


def archive_of(tmp_path: Path, files: dict[str, str]) -> Path:
    """A zip laid out as torch.jit.save lays out its code (``arch/code/...``)."""
    path = tmp_path / "arch.pt"
    with zipfile.ZipFile(path, "w") as zf:
        for name, text in files.items():
            zf.writestr(f"arch/{name}", text)
    return path


def refusal(path: Path) -> str | None:
    try:
        audit.audit_archive(path)
    except audit.ArchiveRefused as exc:
        return exc.finding.message()
    return None


# --------------------------------------------------------------------------- a real archive


class Fmt(Enum):
    NCHW = "NCHW"
    NHWC = "NHWC"


def to_fmt(x, fmt: Fmt):
    if fmt == Fmt.NHWC:
        x = x.permute(0, 2, 3, 1)
    return x


def _enum_model():
    torch = pytest.importorskip("torch")

    class WithFormat(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fmt = Fmt.NHWC

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return to_fmt(x, self.fmt)

    return torch, WithFormat()


def test_an_enum_member_the_archive_defines_is_a_constant(tmp_path):
    """timm's ``nchw_to`` as torch.jit.save writes it: the member bound to a local first."""
    torch, model = _enum_model()
    arch = tmp_path / "fmt.pt"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.jit.save(torch.jit.script(model), str(arch))
    with zipfile.ZipFile(arch) as zf:
        code = "".join(zf.read(n).decode() for n in zf.namelist() if n.endswith(".py"))
    assert re.search(r"\n\s+_\d+ = __torch__\.[\w.]+\.Fmt\.NHWC\n", code), code
    assert refusal(arch) is None


# --------------------------------------------------------------------------- narrowed, not opened

ENUM = 'class Format(Enum):\n  NCHW = "NCHW"\n  NHWC = "NHWC"\n'
USE = "def nchw_to(x: Tensor) -> Tensor:\n  _0 = {}\n  return torch.permute(x, _0)\n"
FILE = "code/__torch__/timm/layers/format.py"


def test_the_enum_member_of_timms_format_passes(tmp_path):
    path = archive_of(
        tmp_path, {FILE: ENUM + USE.format("__torch__.timm.layers.format.Format.NHWC")}
    )
    assert refusal(path) is None


@pytest.mark.parametrize(
    ("files", "bound"),
    [
        # not an enum: a class whose attribute could be anything
        ({FILE: ENUM.replace("(Enum)", "(Module)") + USE.format(
            "__torch__.timm.layers.format.Format.NHWC")}, "_0"),
        # an enum with a method besides its literals
        ({FILE: ENUM + "  def f(self: int) -> int:\n    return 1\n" + USE.format(
            "__torch__.timm.layers.format.Format.NHWC")}, "_0"),
        # a member the enum does not define
        ({FILE: ENUM + USE.format("__torch__.timm.layers.format.Format.OTHER")}, "_0"),
        # the enum's name bound a second time in its file
        ({FILE: ENUM + "def Format(x: int) -> int:\n  return x\n" + USE.format(
            "__torch__.timm.layers.format.Format.NHWC")}, "_0"),
        # the same class name under another file's qualifier
        ({FILE: ENUM, "code/__torch__/m.py": USE.format("__torch__.m.Format.NHWC")}, "_0"),
        # a member whose value is computed, not a literal
        ({FILE: ENUM.replace('"NHWC"', "torch.ops") + USE.format(
            "__torch__.timm.layers.format.Format.NHWC")}, "_0"),
    ],
)  # fmt: skip
def test_what_only_looks_like_an_enum_member_is_still_a_module(tmp_path, files, bound):
    found = refusal(archive_of(tmp_path, files))
    assert found is not None and found.startswith(f"{bound} in nchw_to"), found


SRC = "class A(Module):\n{}\n"


def test_a_local_of_one_function_is_no_alias_in_another():
    """vision_transformer.py: ``pool`` binds ``_5`` to a function, ``forward_features``
    binds its own ``_5`` to a block."""
    text = SRC.format(
        "  def pool(self, x: Tensor) -> Tensor:\n"
        "    _5 = __torch__.timm.models.vision_transformer.global_pool_nlc\n"
        "    return _5(x, )\n"
        "  def forward_features(self, x: Tensor) -> Tensor:\n"
        "    blocks = self.blocks\n"
        '    _5 = getattr(blocks, "5")\n'
        "    return (_5).forward(x, )"
    )
    assert audit.audit_source(text, "code/x.py") == []


@pytest.mark.parametrize(
    ("body", "op"),
    [
        # a nested function reads its enclosing function's alias
        ("    t = ops.mylib\n    def g(y: Tensor) -> Tensor:\n      return t.upload(y)\n"
         "    return g(x)", "ops.mylib.upload"),
        # an alias of one function still resolves in that function
        ('    t = torch\n    return getattr(t, "save")(x, "p")', "getattr(t, 'save')"),
        # an alias of one function used as a value there
        ("    t = torch\n    return f(t)", "t"),
    ],
)  # fmt: skip
def test_aliases_still_reach_where_their_function_reaches(body, op):
    text = SRC.format(
        "  def other(self, x: Tensor) -> Tensor:\n    t = x\n    return t\n"
        f"  def forward(self, x: Tensor) -> Tensor:\n{body}"
    )
    assert op in [f.op for f in audit.audit_source(text, "code/x.py")]


def test_a_name_bound_to_two_modules_is_refused_at_once():
    """The fixpoint of the aliases used to flip between the two forever (a hang)."""

    def stop(*_):
        raise TimeoutError("the audit did not end")

    old = signal.signal(signal.SIGALRM, stop)
    signal.alarm(10)
    try:
        found = audit.audit_source(
            SRC.format(
                "  def forward(self, x: Tensor) -> Tensor:\n    t = torch\n    t = ops\n"
                "    return t.mylib.upload(x)"
            ),  # fmt: skip
            "code/x.py",
        )
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    assert ("t", "a name assigned two different modules") in [(f.op, f.why) for f in found]


def _two_roots(tmp_path: Path, first: str, second: str, name: str) -> Path:
    path = tmp_path / "roots.pt"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr(f"a/{name}", first)
        zf.writestr(f"b/{name}", second)
    return path


BAD = SRC.format('  def forward(self, x: Tensor) -> Tensor:\n    return torch.save(x, "p")')
BENIGN = SRC.format("  def forward(self, x: Tensor) -> Tensor:\n    return x")


@pytest.mark.parametrize("bad_first", [True, False])
def test_every_entry_is_audited_when_two_share_a_code_path(tmp_path, bad_first):
    """`a/code/m.py` and `b/code/m.py` read as the same `code/m.py`: both are audited."""
    first, second = (BAD, BENIGN) if bad_first else (BENIGN, BAD)
    found = refusal(_two_roots(tmp_path, first, second, "code/__torch__/m.py"))
    assert found is not None and "torch.save" in found, found


def test_an_enum_defined_by_one_entry_is_no_constant_when_another_maps_to_its_name(tmp_path):
    use = USE.format("__torch__.timm.layers.format.Format.NHWC")
    module = ENUM.replace("(Enum)", "(Module)") + use
    found = refusal(_two_roots(tmp_path, ENUM, module, FILE))
    assert found is not None and found.startswith("_0 in nchw_to"), found
