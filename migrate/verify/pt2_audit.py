"""Audit a ``torch.export.save`` archive (``.pt2``) before ``torch.export.load`` reads it:
its pickles may name only plain weights (checked by a dry unpickling that runs nothing),
and it may hold no pickled object constants, no AOTInductor libraries, no symbolic-shape
strings beyond sympy's arithmetic and no graph targets outside compute-only operators.
No torch import.
"""

from __future__ import annotations

import io
import json
import pickle
import re
import tokenize
import zipfile
from collections.abc import Iterator
from pathlib import Path

from migrate.verify.archive_zip import ArchiveUnreadable, checked_entries, read_entry
from migrate.verify.audit import DENIED_NAMES, SAFE_NAMESPACES

#: What a plain weights pickle (``torch.save`` of tensors) may name: tensor rebuilders,
#: storage types, dtypes, sizes, devices, ordered dicts. The same idea as
#: ``torch.load(weights_only=True)``, checked without running the pickle.
_PLAIN_GLOBALS = {
    ("torch._utils", "_rebuild_tensor_v2"),
    ("torch._utils", "_rebuild_parameter"),
    ("torch._utils", "_rebuild_parameter_with_state"),
    ("collections", "OrderedDict"),
    ("torch", "Size"),
    ("torch", "device"),
    ("torch", "strided"),
}
_DTYPES = {
    "float32", "float", "float64", "double", "float16", "half", "bfloat16", "uint8", "int8",
    "int16", "short", "int32", "int", "int64", "long", "bool", "complex64", "complex128",
    "cfloat", "cdouble",
}  # fmt: skip


def _plain_global(module: str, name: str) -> bool:
    if (module, name) in _PLAIN_GLOBALS:
        return True
    return module == "torch" and (
        name in _DTYPES or re.fullmatch(r"[A-Z][A-Za-z0-9]*Storage", name) is not None
    )


class _Stub:
    """What every allowed global becomes in the dry run: it takes any arguments and state."""

    def __new__(cls, *args: object, **kwargs: object) -> _Stub:
        return object.__new__(_Stub)

    def __init__(self, *args: object, **kwargs: object) -> None:
        pass

    def __setstate__(self, state: object) -> None:
        pass


class _DryUnpickler(pickle.Unpickler):
    """Reads a pickle with every global replaced by :class:`_Stub`: nothing of the pickle
    runs, and a global outside the plain weights set is refused (every opcode that names a
    global, GLOBAL, STACK_GLOBAL, INST, OBJ, EXT*, goes through ``find_class``)."""

    def find_class(self, module: str, name: str) -> type:
        if not _plain_global(module, name):
            raise _Pt2Refusal(f"it names {module}.{name}")
        return _Stub

    def persistent_load(self, pid: object) -> _Stub:
        return _Stub()


class _Pt2Refusal(Exception):
    """A refusal found inside a .pt2 archive (turned into :class:`ArchiveUnreadable`)."""


def _check_plain_pickle(data: bytes, where: str) -> None:
    """``data`` is a ``torch.save`` file (a zip) whose pickles name only plain globals."""
    if not data.startswith(b"PK"):
        raise _Pt2Refusal(f"{where} is not a zip-format torch.save file")
    zf = zipfile.ZipFile(io.BytesIO(data))
    for info in checked_entries(Path(where), zf, len(data)):
        if info.filename.lower().endswith(".pkl"):
            try:
                _DryUnpickler(io.BytesIO(read_entry(zf, info))).load()
            except _Pt2Refusal as exc:
                raise _Pt2Refusal(f"{where}: {info.filename}: {exc}") from None
            except Exception as exc:
                raise _Pt2Refusal(
                    f"{where}: {info.filename} is not a plain weights pickle "
                    f"({type(exc).__name__}: {exc})"
                ) from None


_SYM_NAMES = frozenset(
    {
        "Symbol", "Integer", "Float", "Rational", "Add", "Mul", "Pow", "Max", "Min", "Abs",
        "Eq", "Ne", "Lt", "Le", "Gt", "Ge", "And", "Or", "Not", "floor", "ceiling", "sqrt",
        "oo", "zoo", "nan", "pi", "E", "True", "False", "None", "S", "Mod", "FloorDiv",
        "ModularIndexing", "Where", "PythonMod", "CleanDiv", "CeilToInt", "FloorToInt",
        "CeilDiv", "LShift", "RShift", "PowByNatural", "FloatPow", "FloatTrueDiv",
        "IntTrueDiv", "IsNonOverlappingAndDenseIndicator", "TruncToFloat", "TruncToInt",
        "RoundToInt", "RoundDecimal", "ToFloat", "Identity", "BitwiseFn_bitwise_and",
        "BitwiseFn_bitwise_or", "positive", "negative", "nonnegative", "nonpositive",
        "integer", "real", "finite", "infinite", "zero", "nonzero", "even", "odd",
        "commutative",
    }
)  # fmt: skip
_SYM_SYMBOL = re.compile(r"[a-z]+[0-9]+")
_SYM_OPS = frozenset("+ - * / // % ** ( ) , = == != < <= > >= & | ~ ^".split())


def _check_sym_expr(expr: str) -> str | None:
    """Why a symbolic-shape expression (``sympy.sympify`` evaluates it) is refused: it may
    only name sympy's arithmetic and symbols (``s0``), with no attribute or item access."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(expr).readline))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return "does not tokenize"
    for tok in tokens:
        kind, text = tok.type, tok.string
        if kind in (tokenize.NEWLINE, tokenize.NL, tokenize.ENDMARKER, tokenize.NUMBER):
            continue
        if kind == tokenize.NAME and (text in _SYM_NAMES or _SYM_SYMBOL.fullmatch(text)):
            continue
        if kind == tokenize.STRING and re.fullmatch(r"'[a-z]+[0-9]*'|\"[a-z]+[0-9]*\"", text):
            continue
        if kind == tokenize.OP and text in _SYM_OPS:
            continue
        return f"holds {text!r}"
    return None


_TARGET_OK = re.compile(r"(_operator|math|operator|builtins)\.[A-Za-z_][A-Za-z0-9_]*|#.*")
_SAFE_OPS = SAFE_NAMESPACES | {"higher_order"}


def _check_target(target: str) -> str | None:
    """Why a graph node's target (``deserialize_operator`` resolves ``torch.*`` by
    attribute, so ``torch.save`` would be called when the program runs) is refused."""
    if _TARGET_OK.fullmatch(target):
        return None
    parts = target.split(".")
    if parts[0] != "torch":
        return None  # left a string by torch: it cannot be called
    if len(parts) >= 4 and parts[1] == "ops" and parts[2] in _SAFE_OPS:
        denied = any(p in DENIED_NAMES or "Storage" in p for p in parts[3:])
        return "reads or writes files or shared storage" if denied else None
    if len(parts) == 2 and re.fullmatch(r"_?sym_[a-z_]+", parts[1]):
        return None
    return "is not an operator of a compute-only namespace"


def _walk_json(doc: object) -> Iterator[tuple[str, object]]:
    stack = [doc]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            for key, value in node.items():
                yield key, value
                stack.append(value)
        elif isinstance(node, list):
            stack.extend(node)


def audit_pt2(path: Path, trust: bool = False) -> None:
    """Check a ``torch.export.save`` archive before ``torch.export.load`` reads it.

    ``torch.export.load`` unpickles pickled weights and constants with
    ``weights_only=False``, ``pickle.loads`` "opaque" constants, loads AOTInductor shared
    libraries, falls back to ``weights_only=False`` for its sample inputs, evaluates
    symbolic-shape strings with ``sympy.sympify`` and resolves graph targets under
    ``torch`` by attribute. Each of those is refused (unless ``trust``); the zip is checked
    always.
    """
    try:
        with zipfile.ZipFile(path) as zf:
            infos = checked_entries(path, zf)
            if trust:
                return
            _audit_pt2_entries(path, zf, infos)
    except _Pt2Refusal as exc:
        raise ArchiveUnreadable(
            f"{path}: refusing to load: {exc}; nothing of it was run "
            "(--trust-archive loads it anyway)"
        ) from None
    except (OSError, zipfile.BadZipFile, RuntimeError, EOFError, ValueError) as exc:
        raise ArchiveUnreadable(f"cannot read {path}: {exc}") from exc


def _audit_pt2_entries(path: Path, zf: zipfile.ZipFile, infos: list) -> None:
    prefixes = {i.filename.split("/", 1)[0] for i in infos}
    if len(prefixes) != 1 or any("/" not in i.filename for i in infos):
        raise _Pt2Refusal("its entries are not all in one folder (not a .pt2 package)")
    prefix = prefixes.pop() + "/"
    by_name = {i.filename[len(prefix) :].lower(): i for i in infos}
    fmt = by_name.get("archive_format")
    if fmt is None or read_entry(zf, fmt).strip() != b"pt2":
        raise _Pt2Refusal("it has no archive_format 'pt2' (torch would read it as legacy)")
    models = [n for n in by_name if n.startswith("models/") and n.endswith(".json")]
    for name in by_name:
        if name.startswith("data/aotinductor/"):
            raise _Pt2Refusal(f"{name}: AOTInductor code (a native library torch loads)")
        base = name.rsplit("/", 1)[-1]
        if name.startswith("data/constants/") and base.startswith(("custom_obj_", "opaque_obj_")):
            raise _Pt2Refusal(f"{name}: a pickled object constant")
    for config in (n for n in by_name if n.startswith(("data/weights/", "data/constants/"))):
        if not config.endswith("_config.json"):
            continue
        doc = json.loads(read_entry(zf, by_name[config]))
        payloads = doc.get("config") if isinstance(doc, dict) else None
        for fqn, meta in (payloads if isinstance(payloads, dict) else {}).items():
            if isinstance(meta, dict) and meta.get("use_pickle"):
                raise _Pt2Refusal(
                    f"{config}: {fqn} is a pickled tensor (torch.export.load unpickles it "
                    "without weights_only)"
                )
    for model in models:
        stem = model[len("models/") : -len(".json")]
        for pickled in (
            f"data/sample_inputs/{stem}.pt",
            f"data/weights/{stem}.pt",
            f"data/constants/{stem}.pt",
        ):
            if pickled in by_name:
                _check_plain_pickle(read_entry(zf, by_name[pickled]), pickled)
        for key, value in _walk_json(json.loads(read_entry(zf, by_name[model]))):
            why = None
            if key == "expr_str" and isinstance(value, str):
                why = _check_sym_expr(value)
                what = f"the shape expression {value[:60]!r}"
            elif key == "target" and isinstance(value, str):
                why = _check_target(value)
                what = f"the graph target {value!r}"
            if why:
                raise _Pt2Refusal(f"{model}: {what} {why}")
