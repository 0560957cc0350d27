"""Audit a TorchScript archive before ``torch.jit.load`` runs any of it.

``torch.jit.load`` compiles the archive's TorchScript source (``code/**/*.py``)
and calls each object's ``__setstate__``; ``verify``/``convert`` then run
``forward`` and every exported method. This module reads the zip without
executing anything and refuses archives whose code reaches outside the
process's tensors: files, storages mapped from files, serialization,
distributed/RPC, or operators of a library outside :data:`SAFE_NAMESPACES`.
No torch import: the audit is pure text.

The code is read the way TorchScript's lexer reads it (:func:`torchscript_reading`), not
the way Python's tokenizer does, and the zip the way torch's reader does (entry names
compared without case, the first of two equal names wins): see ``docs/security.md``.
"""

from __future__ import annotations

import ast
import io
import json
import os
import pickle
import re
import tokenize
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

#: Operator namespaces whose ops only compute on tensors (``torch.ops.<ns>.<op>``,
#: ``torch.classes.<ns>.<Class>``). Anything else may be a library doing I/O.
SAFE_NAMESPACES = frozenset(
    {
        "aten",
        "prim",
        "prims",
        "quantized",
        "_quantized",
        "quantized_decomposed",
        "xnnpack",
        "prepacked",
        "torchvision",  # nms, roi_align: compute only
    }
)

#: Functions and methods (any spelling: ``torch.X``, ``ops.aten.X``, ``value.X``)
#: that read or write files, map storage from files, or (de)serialize objects.
DENIED_NAMES = frozenset(
    {
        "from_file",
        "save",
        "load",
        "_load_for_mobile",
        "_save_for_lite_interpreter",
        "_save_parameters",
        "_load_parameters",
        "share_memory_",
        "_share_filename_",
        "_new_shared_filename",
        "_share_fd_",
        "_new_shared_fd",
        "untyped_storage",
        "storage",
        "set_",
        "open",
        "system",
        "popen",
        "load_library",  # torch.ops.load_library: a shared library's code runs
        # TorchScript's RPC builtins: they send work to other machines.
        "rpc_async",
        "rpc_sync",
        "rpc_remote",
        "remote",
        # Dynamic attribute access by another name (TorchScript has none of these).
        "__getattr__",
        "__getattribute__",
        "__dict__",
        "__class__",
        "__import__",
    }
)

#: Names TorchScript's source importer binds to a module (``torch`` is aten's builtins,
#: ``ops`` is ``torch.ops``, ``__torch__`` the archive's classes): used anywhere but at the
#: head of an attribute chain, they are a way round the dotted-name checks.
MODULE_ROOTS = frozenset({"torch", "ops", "__torch__", "math", "CONSTANTS", "builtins"})

#: Modules of torch that talk to other processes or machines.
DENIED_PREFIXES = ("torch.distributed", "torch.multiprocessing", "torch.hub", "torch.cuda.memory")


@dataclass(frozen=True)
class AuditFinding:
    """One refused call: what, where (method and file:line)."""

    op: str
    method: str
    file: str
    line: int
    why: str

    def message(self) -> str:
        return f"{self.op} in {self.method} ({self.file}:{self.line}): {self.why}"


class ArchiveRefused(Exception):
    """The audit found code that may touch files, processes or the network."""

    def __init__(self, path: Path, finding: AuditFinding) -> None:
        self.path = path
        self.finding = finding
        super().__init__(
            f"{path}: refusing to load: {finding.message()}; the archive was not run "
            "(--trust-archive loads it anyway)"
        )


class ArchiveUnreadable(Exception):
    """The archive's code cannot be read or parsed, so it cannot be audited."""


# --------------------------------------------------------------------------- the zip

MiB = 1 << 20
#: Largest entry outside ``data/`` (code, pickles, debug info, configuration): read whole.
MAX_CODE_BYTES = 64 * MiB
#: Default for all ``data/`` entries together (tensor bytes); ``MIGRATE_MAX_ARCHIVE_BYTES``.
DEFAULT_MAX_DATA_BYTES = 16 << 30
#: An entry over 1 MiB may expand at most this many times (torch stores data uncompressed
#: and deflates code about 5 times; a zip bomb of zeros expands about 1000 times).
MAX_RATIO = 100
MAX_ENTRIES = 100_000
DATA_LIMIT_ENV = "MIGRATE_MAX_ARCHIVE_BYTES"


def max_data_bytes() -> int:
    """The ``data/`` total allowed: ``MIGRATE_MAX_ARCHIVE_BYTES`` (bytes, or with K/M/G)."""
    raw = os.environ.get(DATA_LIMIT_ENV, "").strip()
    if not raw:
        return DEFAULT_MAX_DATA_BYTES
    m = re.fullmatch(r"(\d+)\s*([kKmMgGtT]?)i?[bB]?", raw)
    if not m:
        raise ArchiveUnreadable(f"{DATA_LIMIT_ENV}={raw!r}: expected a size such as 32G")
    return int(m.group(1)) << (10 * " KMGT".index(m.group(2).upper() or " "))


def _is_data(name: str) -> bool:
    """A tensor payload: ``<archive>/data/...`` (not ``data.pkl``, not ``code/data/x.py``)."""
    parts = name.lower().split("/")
    return (len(parts) > 2 and parts[1] == "data") or (len(parts) > 1 and parts[0] == "data")


def checked_entries(path: Path, zf: zipfile.ZipFile, size: int | None = None) -> list:
    """The entries of ``zf``, refused before any is read when torch and an audit would read
    them differently (two entries of one name) or when reading them could exhaust memory
    (declared sizes over the limits, sizes that do not fit the file, zip bombs)."""
    infos = zf.infolist()
    if len(infos) > MAX_ENTRIES:
        raise ArchiveUnreadable(f"{path}: refusing to read: {len(infos)} entries")
    size = path.stat().st_size if size is None else size
    seen: dict[str, str] = {}
    data_total, data_limit = 0, max_data_bytes()
    for info in infos:
        name = info.filename
        key = name.lower()  # torch's zip reader looks names up without case
        if key in seen:
            raise ArchiveUnreadable(
                f"{path}: refusing to read: two entries named {name!r}"
                + (f" and {seen[key]!r}" if seen[key] != name else "")
                + " (torch would load the first, a reader the last)"
            )
        seen[key] = name
        why = None
        if info.flag_bits & 0x1:
            why = "is encrypted"
        elif info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            why = f"uses compression method {info.compress_type} (torch reads stored or deflated)"
        elif info.header_offset + info.compress_size > size:
            why = f"declares {info.compress_size} bytes past the end of the file"
        elif info.compress_type == zipfile.ZIP_STORED and info.compress_size != info.file_size:
            why = f"is stored but declares {info.file_size} bytes in {info.compress_size}"
        elif info.file_size > MiB and info.file_size > MAX_RATIO * max(info.compress_size, 1):
            why = (
                f"expands {info.compress_size} bytes to {info.file_size} "
                f"(over {MAX_RATIO} times: a zip bomb)"
            )
        elif not _is_data(name) and info.file_size > MAX_CODE_BYTES:
            why = f"declares {info.file_size} bytes (over the limit of {MAX_CODE_BYTES} bytes)"
        if why:
            raise ArchiveUnreadable(f"{path}: refusing to read: {name} {why}")
        if _is_data(name):
            data_total += info.file_size
    if data_total > data_limit:
        raise ArchiveUnreadable(
            f"{path}: refusing to read: its data/ entries declare {data_total} bytes, over "
            f"the limit of {data_limit} ({DATA_LIMIT_ENV} raises it)"
        )
    return infos


def _read(zf: zipfile.ZipFile, info: zipfile.ZipInfo) -> bytes:
    """An entry already checked by :func:`checked_entries` (zipfile stops at its declared
    size, so a lying size cannot make it read more)."""
    with zf.open(info) as fh:
        return fh.read(MAX_CODE_BYTES + 1)


# --------------------------------------------------------------------------- TorchScript's reading

#: Where plain code stops: a comment, a string, or a character the two readers disagree on.
_SPECIAL = re.compile(r"[#\"']|[^\n\x20-\x7e]")
_STRING_END = {
    (q, n): re.compile(
        (rf"(?:[^{q}\\\n]|\\.)*?{q}" if n == 1 else rf"(?:[^{q}\\]|\\.|{q}(?!{q}{q}))*?{q}{{3}}"),
        re.DOTALL,
    )
    for q in "\"'"
    for n in (1, 3)
}


def torchscript_reading(text: str, file: str) -> str:
    """The code of ``text`` as TorchScript's lexer splits it, as text Python reads alike.

    TorchScript's lexer (``torch/csrc/jit/frontend/lexer.h``) ends a comment only at
    ``\\n``, lexes a ``# type:`` comment as a token, and finds a string's end by its own
    escape rule; Python's tokenizer ends comments at ``\\r`` too, and reads prefixes
    (``f"..."``) and line ends its own way. So the comments and strings are found here with
    TorchScript's rules; comments are dropped and each string becomes a plain Python
    literal of its raw text. Any character the two could read differently outside a
    string (a carriage return, form feed or other control character, a non-ASCII
    character) is refused, in comments too: torch.jit.save writes none of them.
    """
    out: list[str] = []
    pos, n = 0, len(text)

    def refuse(at: int, what: str) -> ArchiveUnreadable:
        line = text.count("\n", 0, at) + 1
        return ArchiveUnreadable(f"{file}:{line}: refusing to read: {what}")

    while pos < n:
        m = _SPECIAL.search(text, pos)
        if m is None:
            out.append(text[pos:])
            break
        out.append(text[pos : m.start()])
        at, ch = m.start(), m.group()
        if ch == "#":
            end = text.find("\n", at)
            end = n if end < 0 else end
            comment = text[at:end]
            if comment.startswith("# type:"):
                raise refuse(at, "a '# type:' comment (TorchScript reads it as code)")
            odd = re.search(r"[^\x20-\x7e]", comment)
            if odd:
                raise refuse(
                    at + odd.start(),
                    f"{odd.group()!r} in a comment (TorchScript ends comments only at "
                    "a newline, Python also at a carriage return)",
                )
            pos = end
        elif ch in "\"'":
            quotes = 3 if text.startswith(ch * 3, at) else 1
            end = _STRING_END[(ch, quotes)].match(text, at + quotes)
            if end is None:
                raise refuse(at, "a string that does not end (TorchScript's rules)")
            raw = text[at + quotes : end.end() - quotes]
            if out and re.search(r"[\w]$", out[-1]):
                out.append(" ")  # `f"..."`: Python must not read a prefix TorchScript lacks
            out.append(repr(raw))
            pos = end.end()
        else:
            what = "a carriage return" if ch == "\r" else f"the character {ch!r}"
            raise refuse(at, f"{what} outside a string (TorchScript and Python read it apart)")
    return "".join(out)


# --------------------------------------------------------------------------- the code


def _dotted(node: ast.AST, aliases: dict[str, str] | None = None) -> str | None:
    """``torch.ops.aten.add`` for an attribute chain on a name; None for anything else.
    A name bound to a module (``t = torch.ops``) reads as what it names."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append((aliases or {}).get(node.id, node.id))
        return ".".join(reversed(parts))
    return None


def _check_name(name: str) -> str | None:
    """Why a called (or referenced) dotted name is refused, or None."""
    parts = name.split(".")
    for prefix in DENIED_PREFIXES:
        if name == prefix or name.startswith(prefix + "."):
            return "talks to other processes or machines"
    ns = None
    if parts[0] == "ops" and len(parts) > 2:
        ns = parts[1]
    elif parts[0] == "torch" and len(parts) > 3 and parts[1] in ("ops", "classes"):
        ns = parts[2]
    if ns is not None and ns not in SAFE_NAMESPACES:
        return f"operator namespace {ns!r} is not known to be compute-only"
    last = parts[-1]
    if last in DENIED_NAMES:
        return "reads or writes files or shared storage"
    if "Storage" in last:
        return "builds a storage (possibly file-backed)"
    return None


_LITERAL_ATTR = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9]+")


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def _assignments(root: ast.AST, nested: bool) -> list[ast.Assign]:
    """The ``name = value`` statements of ``root``'s scope; ``nested``: those of the functions
    and classes inside it too (a nested scope's names count for its enclosing one)."""
    out, stack = [], list(ast.iter_child_nodes(root))
    while stack:
        node = stack.pop()
        if isinstance(node, _SCOPES) and not nested:
            continue
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
        ):
            out.append(node)
        stack.extend(ast.iter_child_nodes(node))
    return sorted(out, key=lambda n: (n.lineno, n.col_offset))


def _module_aliases(
    root: ast.AST,
    constants: frozenset[str] = frozenset(),
    inherited: dict[str, str] | None = None,
    nested: bool = True,
) -> tuple[dict[str, str], list[tuple[str, int]]]:
    """Names assigned a module in ``root``'s scope (``t = torch``, ``o = ops.mylib``), on top
    of the ``inherited`` ones of the enclosing scopes, and the names assigned two different
    modules there (``(name, line)``: refused, since one reading per name is followed).

    TorchScript functions share no locals, so the aliases of one function are not those of
    another. A name assigned one of ``constants`` (the members of the archive's own enums,
    see :func:`enum_members`) holds a value, not a module: it is no alias.
    """
    aliases = dict(inherited or {})
    conflicts: list[tuple[str, int]] = []
    assigns = _assignments(root, nested)
    changed = True
    while changed:  # each name is set once at most: this ends
        changed = False
        for node in assigns:
            target = node.targets[0].id  # type: ignore[attr-defined]
            name = _dotted(node.value, aliases)
            if name in constants or target in MODULE_ROOTS:
                continue
            if not name or name.split(".")[0] not in MODULE_ROOTS:
                continue
            if target not in aliases:
                aliases[target] = name
                changed = True
            elif aliases[target] != name and (target, node.lineno) not in conflicts:
                conflicts.append((target, node.lineno))
    return aliases, conflicts


class _Auditor(ast.NodeVisitor):
    def __init__(self, file: str, constants: frozenset[str] = frozenset()) -> None:
        self.file = file
        self.constants = constants
        self.aliases: dict[str, str] = {}  # those of the scope being visited
        self.scope: list[str] = []
        self.found: list[AuditFinding] = []

    def audit(self, tree: ast.Module) -> list[AuditFinding]:
        self._in_scope(tree, nested=False, name=None)
        return self.found

    def _in_scope(self, node: ast.AST, nested: bool, name: str | None) -> None:
        """Visit ``node``'s body with the aliases of its scope."""
        outer = self.aliases
        self.aliases, conflicts = _module_aliases(node, self.constants, outer, nested)
        if name is not None:
            self.scope.append(name)
        for target, line in conflicts:
            self._add(target, line, "a name assigned two different modules")
        for stmt in node.body:  # type: ignore[attr-defined]
            self.visit(stmt)
        if name is not None:
            self.scope.pop()
        self.aliases = outer

    def _where(self) -> str:
        return ".".join(self.scope) or "<module>"

    def _add(self, op: str, line: int, why: str) -> None:
        self.found.append(AuditFinding(op, self._where(), self.file, line, why))

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for part in [*node.bases, *node.keywords, *node.decorator_list]:
            self.visit(part)
        self._in_scope(node, nested=False, name=node.name)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        if node.name == "__setstate__":
            self.scope.append(node.name)
            self._check_setstate(node)
            self.scope.pop()
        self._in_scope(node, nested=True, name=node.name)

    visit_AsyncFunctionDef = visit_FunctionDef  # type: ignore[assignment]  # not TorchScript

    def _check_setstate(self, node: ast.FunctionDef) -> None:
        """``__setstate__`` runs inside ``torch.jit.load``: it may only assign fields."""
        for stmt in node.body:
            if isinstance(stmt, ast.Assign | ast.AnnAssign):
                continue
            if isinstance(stmt, ast.Return) and (
                stmt.value is None
                or (isinstance(stmt.value, ast.Constant) and stmt.value.value is None)
            ):
                continue
            what = type(stmt).__name__.lower()
            if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
                what = f"call {_dotted(stmt.value.func) or 'expression'}"
            self._add(
                what, stmt.lineno, "__setstate__ (run by torch.jit.load) may only assign fields"
            )

    def _check_getattr(self, node: ast.Call) -> None:
        """``getattr(obj, "literal")`` reads as ``obj.literal``; anything else is refused:
        a computed attribute name, or any getattr on a module (``getattr(torch, "save")``)."""
        args = node.args
        attr = args[1] if len(args) == 2 and not node.keywords else None
        if not (
            isinstance(attr, ast.Constant)
            and isinstance(attr.value, str)
            and _LITERAL_ATTR.fullmatch(attr.value)
        ):
            self._add("getattr", node.lineno, "dynamic attribute access (not a literal name)")
            return
        base = _dotted(args[0], self.aliases)
        shown = f"getattr({ast.unparse(args[0])}, {attr.value!r})"
        if base is not None and base.split(".")[0] in MODULE_ROOTS:
            self._add(shown, node.lineno, "dynamic attribute access on a module")
            return
        why = _check_name(f"{base or '<value>'}.{attr.value}")
        if why:
            self._add(shown, node.lineno, why)
        for arg in args[:1]:
            if not isinstance(arg, ast.Name):  # getattr(self, "x"): self is fine
                self.visit(arg)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Name) and func.id == "getattr":
            self._check_getattr(node)
            for kw in node.keywords:
                self.visit(kw.value)
            return
        name = _dotted(func, self.aliases)
        if name is None and isinstance(func, ast.Attribute):
            name = f"<value>.{func.attr}"  # a method call on a computed value
        if name is not None:
            why = _check_name(name)
            if why:
                self._add(name, node.lineno, why)
        if isinstance(func, ast.Name | ast.Attribute):
            self._visit_chain(func)
        else:
            self.visit(func)
        for arg in [*node.args, *(kw.value for kw in node.keywords)]:
            self.visit(arg)

    def _visit_chain(self, node: ast.AST) -> None:
        """The head of a called attribute chain: only computed parts need a visit."""
        while isinstance(node, ast.Attribute):
            node = node.value
        if not isinstance(node, ast.Name):
            self.visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        # A denied operator passed around without being called (``f = torch.from_file``).
        name = _dotted(node, self.aliases)
        if name is not None:
            if name.split(".")[0] in MODULE_ROOTS:
                why = _check_name(name)
                if why:
                    self._add(name, node.lineno, why)
            return
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        # A module or getattr as a value: `f(torch)`, `(torch, 1)`, `g = getattr`. The
        # aliases a plain `t = torch` makes are followed; anything else is refused.
        if node.id == "getattr":
            self._add("getattr", node.lineno, "getattr used as a value")
        elif node.id in MODULE_ROOTS or node.id in self.aliases:
            self._add(node.id, node.lineno, "a module used as a value")

    def visit_Assign(self, node: ast.Assign) -> None:
        is_alias = (
            len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and node.targets[0].id in self.aliases
            and _dotted(node.value, self.aliases) is not None
        )
        if not is_alias:
            self.generic_visit(node)
            return
        name = _dotted(node.value, self.aliases)
        why = _check_name(name) if name else None
        if why:
            self._add(name, node.lineno, why)


def _parse(text: str, file: str) -> ast.Module:
    """One ``code/`` file, read as TorchScript reads it."""
    code = torchscript_reading(text, file)
    try:
        return ast.parse(code, filename=file)
    except SyntaxError as exc:
        raise ArchiveUnreadable(
            f"{file}: its TorchScript source does not parse ({exc.msg})"
        ) from exc


def _qualifier(file: str) -> str | None:
    """``code/__torch__/a/b.py`` -> ``__torch__.a.b``: the name TorchScript's importer
    gives the classes of that file (None for a path it would not import so)."""
    if not (file.startswith("code/") and file.endswith(".py")):
        return None
    parts = file[len("code/") : -len(".py")].split("/")
    return ".".join(parts) if all(p.isidentifier() for p in parts) else None


def _enum_literals(node: ast.ClassDef) -> list[str] | None:
    """The members of ``class C(Enum):`` whose body only assigns literals (``A = "A"``)."""
    if node.decorator_list or node.keywords or [ast.unparse(b) for b in node.bases] != ["Enum"]:
        return None
    members = []
    for stmt in node.body:
        if not (
            isinstance(stmt, ast.Assign)
            and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)
            and isinstance(stmt.value, ast.Constant)
            and type(stmt.value.value) in (str, int, float)
        ):
            return None
        members.append(stmt.targets[0].id)
    return members


def enum_members(trees: list[tuple[str, ast.Module]]) -> frozenset[str]:
    """``__torch__.pkg.file.C.MEMBER`` for each member of the archive's own enums.

    ``torch.jit.save`` writes a scripted ``Enum`` as a top-level ``class C(Enum):`` of
    literal members and refers to a member by its qualified name (``_0 =
    __torch__.timm.layers.format.Format.NHWC``): such a name is a constant, not a module.
    Only a class whose name its file binds once, with literals only, counts, and only when
    no other code file of the archive maps to the same qualified name.
    """
    out: dict[str, list[str]] = {}
    seen: dict[str, int] = {}  # qualified class name -> how many files define it
    for file, tree in trees:
        qual = _qualifier(file)
        if qual is None:
            continue
        bound: dict[str, int] = {}
        for node in tree.body:
            names = (
                [node.name]
                if isinstance(node, ast.ClassDef | ast.FunctionDef)
                else [n.id for n in ast.walk(node) if isinstance(n, ast.Name)]
            )
            for name in names:
                bound[name] = bound.get(name, 0) + 1
        for node in tree.body:
            if isinstance(node, ast.ClassDef):
                cls = f"{qual}.{node.name}"
                seen[cls] = seen.get(cls, 0) + 1
                members = _enum_literals(node) if bound.get(node.name) == 1 else None
                out[cls] = [f"{cls}.{m}" for m in members or []]
    return frozenset(m for cls, members in out.items() if seen[cls] == 1 for m in members)


def _audit_tree(tree: ast.Module, file: str, constants: frozenset[str]) -> list[AuditFinding]:
    return _Auditor(file, constants).audit(tree)


def audit_source(
    text: str, file: str, constants: frozenset[str] = frozenset()
) -> list[AuditFinding]:
    """The refused calls of one ``code/`` file, read as TorchScript reads it; ``constants``:
    qualified names that hold values (:func:`enum_members`)."""
    return _audit_tree(_parse(text, file), file, constants)


def _is_code(name: str) -> bool:
    # Every .py entry under a code/ folder, in any case: torch looks code/<name>.py up
    # without case, so `CODE/__torch__.PY` is code too.
    low = name.lower()
    return low.endswith(".py") and "/code/" in f"/{low}"


def audit_archive(path: Path, code: bool = True) -> list[str]:
    """Check a ``torch.jit.save`` archive's zip (always) and audit every code file (unless
    ``code`` is False: ``--trust-archive``); raise on the first finding.

    Returns the names of the code files read.
    """
    try:
        with zipfile.ZipFile(path) as zf:
            infos = checked_entries(path, zf)
            names = [i.filename for i in infos if _is_code(i.filename)]
            if not code:
                return names
            sources = {i.filename: _read(zf, i) for i in infos if _is_code(i.filename)}
    except (OSError, zipfile.BadZipFile, RuntimeError, EOFError, ValueError) as exc:
        raise ArchiveUnreadable(f"cannot read {path}: {exc}") from exc
    if not names:
        raise ArchiveUnreadable(f"{path} holds no TorchScript source (code/*.py) to audit")
    # (label, tree) per entry: two entries may share a label (`a/code/m.py`, `b/code/m.py`),
    # and every one of them is audited
    trees: list[tuple[str, ast.Module]] = []
    for name in sorted(names):
        try:
            text = sources[name].decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ArchiveUnreadable(f"{path}: {name} is not UTF-8 text") from exc
        low = name.lower()
        label = name[low.index("code/") :] if "code/" in low else name
        try:
            trees.append((label, _parse(text, label)))
        except ArchiveUnreadable as exc:
            raise ArchiveUnreadable(f"{path}: {exc}") from None
    constants = enum_members(trees)
    for label, tree in trees:
        found = _audit_tree(tree, label, constants)
        if found:
            raise ArchiveRefused(path, found[0])
    return names


# --------------------------------------------------------------------------- .pt2 archives

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
                _DryUnpickler(io.BytesIO(_read(zf, info))).load()
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
    if fmt is None or _read(zf, fmt).strip() != b"pt2":
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
        doc = json.loads(_read(zf, by_name[config]))
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
                _check_plain_pickle(_read(zf, by_name[pickled]), pickled)
        for key, value in _walk_json(json.loads(_read(zf, by_name[model]))):
            why = None
            if key == "expr_str" and isinstance(value, str):
                why = _check_sym_expr(value)
                what = f"the shape expression {value[:60]!r}"
            elif key == "target" and isinstance(value, str):
                why = _check_target(value)
                what = f"the graph target {value!r}"
            if why:
                raise _Pt2Refusal(f"{model}: {what} {why}")
