"""Apply the edits that findings carry and fix up imports; what apply writes goes through
migrate.safe_write.

Nothing is lost: output that does not parse is never written, each file is replaced by
rename from a temp file in the same folder, and encoding, BOM, newlines and mode are kept.
"""

from __future__ import annotations

import ast
import bisect
import codecs
import dataclasses
import difflib
import io
import os
import re
import stat
import sys
import tokenize
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from migrate import gitsafe
from migrate.analysis.parsed import tree_of
from migrate.checks.base import Edit, LineIndex, source_lines
from migrate.findings import Applicability, Finding, ImportSpec
from migrate.plan.units import (  # noqa: F401 (WITH_UNSAFE, fixable: also imported from here)
    WITH_UNSAFE,
    WRITABLE,
    FixUnit,
    Held,
    fix_units,
    fixable,
)
from migrate.safe_write import TEMP_NAME, TEMP_SUFFIX

MAX_ROUNDS = 5

# Imports that only exist for TorchScript; removed when the rewrite leaves them unused.
TORCHSCRIPT_MODULES = (
    "torch.jit",
    "torch.utils.mobile_optimizer",
    "torch.jit.mobile",
    # timm's switches for scriptable layers (MIG144): `from timm.layers import set_scriptable`.
    *(
        f"{m}.{n}"
        for m in ("timm.layers", "timm.layers.config", "timm.models.layers")
        for n in ("set_scriptable", "set_layer_config")
    ),
)


@dataclass
class Decoded:
    text: str
    encoding: str
    bom: bool
    newline: str


def decode(data: bytes) -> Decoded:
    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    bom = data.startswith(codecs.BOM_UTF8)
    text = data.decode(encoding)
    if text.startswith("\ufeff"):
        text = text[1:]
    return Decoded(text, encoding, bom, newline_of(text))


def newline_of(text: str) -> str:
    """The file's line ending: the one most of its lines end with (CRLF, a lone CR or LF;
    LF on a tie). New lines get it; the lines already there keep their own (keep_endings)."""
    crlf = text.count("\r\n")
    counts = {"\n": text.count("\n") - crlf, "\r\n": crlf, "\r": text.count("\r") - crlf}
    return max(counts, key=counts.__getitem__)


def keep_endings(original: str, fixed: str) -> str:
    """`fixed` with each line the fix left alone ending as it did in `original`, and every
    other line ending with the original's most common ending (a file may mix them)."""
    old, new = source_lines(original), source_lines(fixed)
    old_body, new_body = [_body(line) for line in old], [_body(line) for line in new]
    majority = newline_of(original)
    out = []
    for tag, i1, i2, j1, j2 in line_opcodes(old_body, new_body):
        # A line edited in place (as many lines on both sides) is still that line.
        paired = tag == "equal" or (tag == "replace" and i2 - i1 == j2 - j1)
        for k in range(j2 - j1):
            body = new_body[j1 + k]
            ending = new[j1 + k][len(body) :]
            if ending:  # only a last line ends with nothing, and it stays so
                ending = (old[i1 + k][len(old_body[i1 + k]) :] if paired else "") or majority
            out.append(body + ending)
    return "".join(out)


def line_opcodes(old: list[str], new: list[str]) -> list[tuple[str, int, int, int, int]]:
    """difflib's opcodes between two line lists, near-linear on large files: the common head
    and tail are matched first, and the middle is diffed with difflib's junk heuristic (a
    file of a thousand alike decorated functions made autojunk=False quadratic: 89 s)."""
    head = 0
    while head < min(len(old), len(new)) and old[head] == new[head]:
        head += 1
    tail = 0
    while (
        tail < min(len(old), len(new)) - head
        and old[len(old) - 1 - tail] == new[len(new) - 1 - tail]
    ):
        tail += 1
    mid_old, mid_new = old[head : len(old) - tail], new[head : len(new) - tail]
    ops: list[tuple[str, int, int, int, int]] = []
    if head:
        ops.append(("equal", 0, head, 0, head))
    matcher = difflib.SequenceMatcher(None, mid_old, mid_new, autojunk=len(mid_old) > 400)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        ops.append((tag, i1 + head, i2 + head, j1 + head, j2 + head))
    if tail:
        ops.append(("equal", len(old) - tail, len(old), len(new) - tail, len(new)))
    return ops


def relocate(findings: list[Finding], before: str, after: str) -> list[Finding]:
    """`findings` located in the text `before`, moved to where the same lines are in `after`
    (a report must name the file as it is on disk: the original after a dry run, the
    tidied text after a write). A line that changed maps to the start of what replaced it."""
    if before == after or not findings:
        return findings
    old = [_body(line) for line in source_lines(before)]
    new = [_body(line) for line in source_lines(after)]
    blocks = line_opcodes(old, new)
    starts = [i1 for _, i1, _, _, _ in blocks]

    def moved(line: int) -> int:
        index = line - 1  # 0-based line of `before`
        k = bisect.bisect_right(starts, index) - 1
        if k < 0:
            return line
        tag, i1, _, j1, j2 = blocks[k]
        if tag == "equal":
            return j1 + index - i1 + 1
        return j1 + min(index - i1, max(j2 - j1 - 1, 0)) + 1

    out = []
    for f in findings:
        line, end = moved(f.line), moved(f.end_line)
        out.append(
            f
            if (line, end) == (f.line, f.end_line)
            else dataclasses.replace(f, line=line, end_line=max(end, line))
        )
    return out


def _body(line: str) -> str:
    return line.rstrip("\r\n")


def encode(decoded: Decoded, text: str) -> bytes:
    encoding = "utf-8" if decoded.encoding == "utf-8-sig" else decoded.encoding
    data = text.encode(encoding)
    return codecs.BOM_UTF8 + data if decoded.bom else data


@dataclass
class FileFix:
    path: str
    original: str
    fixed: str
    applied: list[Finding] = field(default_factory=list)
    remaining: list[Finding] = field(default_factory=list)
    held: list[Held] = field(default_factory=list)
    error: str | None = None
    # BLAKE2 of the bytes `original` was decoded from: apply writes only over those bytes.
    source_digest: bytes | None = None

    @property
    def changed(self) -> bool:
        return self.error is None and self.fixed != self.original

    def diff(self) -> str:
        if not self.changed:
            return ""
        return "".join(
            difflib.unified_diff(
                source_lines(self.original),
                source_lines(self.fixed),
                fromfile=f"a/{self.path}",
                tofile=f"b/{self.path}",
            )
        )


def choose_edits(
    findings: Iterable[Finding], allowed: Collection[Applicability] = WRITABLE
) -> tuple[list[Finding], list[Edit]]:
    """Take whole units whose edits do not overlap those already taken (first wins)."""
    units, _ = fix_units(findings, allowed)
    return take_units(units)


def take_units(units: list[FixUnit]) -> tuple[list[Finding], list[Edit]]:
    taken: list[Finding] = []
    spans = _Spans()
    edits: list[Edit] = []
    for unit in sorted(units, key=lambda u: u.first):
        if any(spans.collides(e) for e in unit.edits):
            continue
        for e in unit.edits:
            spans.add(e)
        taken.extend(unit.findings)
        edits.extend(unit.edits)
    return taken, sorted(set(edits))


class _Spans:
    """Edits taken so far, sorted by start, for overlap checks in O(log n) (a file can hold
    thousands of findings)."""

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.edits: list[Edit] = []
        self.seen: set[Edit] = set()

    def collides(self, e: Edit) -> bool:
        if e in self.seen:
            return False
        i = bisect.bisect_left(self.starts, e.start)
        # Taken edits do not overlap each other, so only the two before `e` and those that
        # start inside it can collide with it.
        j = max(i - 2, 0)
        while j < len(self.edits) and (j < i or self.starts[j] <= e.end):
            if _overlaps(e, self.edits[j]):
                return True
            j += 1
        return False

    def add(self, e: Edit) -> None:
        if e in self.seen:
            return
        i = bisect.bisect_left(self.starts, e.start)
        self.starts.insert(i, e.start)
        self.edits.insert(i, e)
        self.seen.add(e)


def _overlaps(a: Edit, b: Edit) -> bool:
    if a == b:
        return False
    if a.start == a.end or b.start == b.end:  # insertions collide only inside the other
        point, span = (a, b) if a.start == a.end else (b, a)
        return span.start < point.start < span.end
    return a.start < b.end and b.start < a.end


def apply_edits(text: str, edits: list[Edit], newline: str) -> str:
    out = []
    last = 0
    seen: set[Edit] = set()
    for edit in sorted(edits):
        if edit in seen:
            continue
        seen.add(edit)
        out.append(text[last : edit.start])
        out.append(_page_breaks(text, edit))
        out.append(edit.text.replace("\n", newline) if newline != "\n" else edit.text)
        last = max(last, edit.end)
    out.append(text[last:])
    return "".join(out)


def _page_breaks(text: str, edit: Edit) -> str:
    """The form feeds opening a line the edit rewrites or removes (`\\f@torch.jit.unused`):
    the author's page breaks, kept in front of what replaces it (at the start of a line a form
    feed is whitespace that Python ignores)."""
    if text[edit.start : edit.start + 1] != "\x0c" or edit.text.startswith("\x0c"):
        return ""
    if edit.start and text[edit.start - 1] not in "\r\n":
        return ""
    removed = text[edit.start : edit.end]
    return removed[: len(removed) - len(removed.lstrip("\x0c"))]


# --------------------------------------------------------------------------- imports


def _import_specs(findings: Iterable[Finding]) -> list[str]:
    specs: list[str] = []
    for f in findings:
        for spec in f.autofix.imports if f.autofix else ():
            statement = spec.statement() if isinstance(spec, ImportSpec) else spec
            if statement not in specs:
                specs.append(statement)
    return specs


def _used_names(tree: ast.Module) -> set[str]:
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}


def _attribute_chains(tree: ast.Module) -> set[str]:
    chains = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            parts = []
            cur: ast.AST = node
            while isinstance(cur, ast.Attribute):
                parts.append(cur.attr)
                cur = cur.value
            if isinstance(cur, ast.Name):
                parts.append(cur.id)
                chains.add(".".join(reversed(parts)))
    return chains


def fix_imports(text: str, specs: list[str], python_file: bool = True) -> str:
    """Add the imports the new code needs and drop TorchScript imports it no longer uses."""
    if not python_file:
        return text
    tree = tree_of(text)
    used = _used_names(tree)
    chains = _attribute_chains(tree)
    bound = _bound_imports(tree)
    to_add = [s for s in specs if not _already_bound(s, bound)]
    to_remove: list[tuple[str, str | None, str | None]] = []
    keep_torch = "torch" in used
    for node in tree.body if isinstance(tree, ast.Module) else []:
        for stmt in _top_level_imports(node):
            if isinstance(stmt, ast.ImportFrom) and stmt.module and not stmt.level:
                whole = stmt.module in TORCHSCRIPT_MODULES
                # `from torch import jit`, `from torch.utils import mobile_optimizer`
                submodules = {
                    a.name for a in stmt.names if f"{stmt.module}.{a.name}" in TORCHSCRIPT_MODULES
                }
                if whole or submodules:
                    for alias in stmt.names:
                        if not whole and alias.name not in submodules:
                            continue
                        if (alias.asname or alias.name) not in used:
                            to_remove.append((stmt.module, alias.name, alias.asname))
            elif isinstance(stmt, ast.Import):
                for alias in stmt.names:
                    if alias.name not in TORCHSCRIPT_MODULES:
                        continue
                    if alias.asname:
                        if alias.asname not in used:
                            to_remove.append((alias.name, None, alias.asname))
                    elif not any(c == alias.name or c.startswith(alias.name + ".") for c in chains):
                        to_remove.append((alias.name, None, None))
                        # `import torch.jit` also bound `torch`: keep that binding alive.
                        if keep_torch and not _binds_torch_otherwise(tree):
                            to_add.append("import torch")
    if not to_add and not to_remove:
        return text
    # Text edits at ast positions, not libcst codemods: libcst's import visitors cost about
    # 0.25 s a file (metadata + matchers), which made apply 25x slower than the scan.
    edits = _removal_edits(text, tree, to_remove)
    if edits is None:
        return _fix_imports_libcst(text, to_add, to_remove)
    newline = newline_of(text)
    # Plain imports first, then from-imports, each sorted (as libcst's AddImportsVisitor).
    additions = sorted(dict.fromkeys(to_add), key=lambda s: (s.startswith("from "), s))
    if additions:
        edits.extend(_addition_edits(text, tree, additions, avoid=edits))
    return apply_edits(text, edits, newline)


def _alias_text(alias: ast.alias) -> str:
    return f"{alias.name} as {alias.asname}" if alias.asname else alias.name


def _removal_edits(
    text: str, tree: ast.Module, to_remove: list[tuple[str, str | None, str | None]]
) -> list[Edit] | None:
    """Edits dropping the given import aliases, or None where text edits are not safe."""
    if not to_remove:
        return []
    index = LineIndex(text)
    doomed = set(to_remove)
    edits: list[Edit] = []
    for node in tree.body:
        block_owner = node if isinstance(node, ast.Try) else None
        for stmt in _top_level_imports(node):
            if isinstance(stmt, ast.Import):
                keys = [(a.name, None, a.asname) for a in stmt.names]
            elif isinstance(stmt, ast.ImportFrom) and stmt.module and not stmt.level:
                keys = [(stmt.module, a.name, a.asname) for a in stmt.names]
            else:
                continue
            if not any(k in doomed for k in keys):
                continue
            kept = [a for a, k in zip(stmt.names, keys, strict=True) if k not in doomed]
            first = index.offset(stmt.lineno, 0)
            last = index.offset(stmt.end_lineno + 1, 0)  # type: ignore[operator]
            lines = text[first:last]
            indent = lines[: len(lines) - len(lines.lstrip(" \t"))]
            # Another statement on the same lines (`import a; x = 1`) or a comment inside a
            # parenthesized import: leave it to libcst.
            if lines.strip().count("\n") and "#" in lines or ";" in lines:
                return None
            trailing = lines.rstrip("\r\n")
            comment = ""
            if "#" in trailing:
                comment = "  " + trailing[trailing.index("#") :]
            if kept:
                names = ", ".join(_alias_text(a) for a in kept)
                if isinstance(stmt, ast.Import):
                    new = f"{indent}import {names}{comment}\n"
                else:
                    new = f"{indent}from {stmt.module} import {names}{comment}\n"
            elif block_owner is not None and len(block_owner.body) == 1:
                new = f"{indent}pass\n"  # a try: body must not become empty
            else:
                new = ""
            edits.append(Edit(first, last, new))
    return edits


def _section(module: str, level: int = 0) -> int:
    """isort's section order: __future__, standard library, third party, local."""
    if level:
        return 3
    top = module.split(".")[0]
    if top == "__future__":
        return 0
    return 1 if top in sys.stdlib_module_names else 2


def _sort_key(stmt: ast.stmt) -> tuple[int, str]:
    """ruff's default isort order inside a section: `import x` lines, then `from x import`."""
    if isinstance(stmt, ast.Import):
        return (0, stmt.names[0].name.lower())
    assert isinstance(stmt, ast.ImportFrom)
    return (1, ("." * stmt.level + (stmt.module or "")).lower())


def _addition_edits(
    text: str, tree: ast.Module, additions: list[str], avoid: Iterable[Edit] = ()
) -> list[Edit]:
    """Insert each import into the leading import block where isort would put it: into the
    statement importing from its module, inside the group of its section in sorted position,
    or as a new group between its neighbours. Statements `avoid` edits are not merged into."""
    index = LineIndex(text)
    block = _leading_imports(tree)
    edits, additions = _merge_edits(text, index, block, additions, list(avoid))
    inserts: dict[tuple[int, int], list[tuple[tuple[int, str], str]]] = {}
    if not block:
        line = _insertion_line(tree)
        after_new = "\n" if index.offset(line, 0) < len(text) else ""
        if after_new and text[index.offset(line, 0) :].startswith(("\n", "\r\n")):
            after_new = ""
        elif after_new and isinstance(_first_code(tree, line), (ast.FunctionDef, ast.ClassDef)):
            after_new = "\n\n"
        at = index.offset(line, 0)
        return [Edit(at, at, "".join(f"{s}\n" for s in additions) + after_new)]
    groups: list[list[ast.stmt]] = [[block[0]]]
    for prev, stmt in zip(block, block[1:], strict=False):
        if stmt.lineno > prev.end_lineno + 1:  # type: ignore[operator]
            groups.append([])
        groups[-1].append(stmt)
    ranks = [_group_section(g) for g in groups]
    for spec in additions:
        new = ast.parse(spec).body[0]
        rank = _section(getattr(new, "module", None) or new.names[0].name)  # type: ignore[attr-defined]
        key = _sort_key(new)
        if rank in ranks:
            group = groups[ranks.index(rank)]
            later = [s for s in group if _sort_key(s) > key]
            if later:
                where = (index.offset(later[0].lineno, 0), 0)
            else:
                where = (index.offset(group[-1].end_lineno + 1, 0), 0)  # type: ignore[operator]
        else:
            higher = [g for g, r in zip(groups, ranks, strict=True) if r > rank]
            if higher:
                where = (index.offset(higher[0][0].lineno, 0), 1)  # new group above it
            else:
                where = (index.offset(groups[-1][-1].end_lineno + 1, 0), 2)  # type: ignore[operator]
        inserts.setdefault(where, []).append((key, spec))
    # One edit per offset: the end of the last group may also take a new group after it.
    texts: dict[int, str] = {}
    for (at, kind), specs in sorted(inserts.items()):
        lines = "".join(f"{spec}\n" for _, spec in sorted(specs))
        texts[at] = texts.get(at, "") + {0: lines, 1: lines + "\n", 2: "\n" + lines}[kind]
    return edits + [Edit(at, at, added) for at, added in texts.items()]


def _merge_edits(
    text: str, index: LineIndex, block: list[ast.stmt], additions: list[str], avoid: list[Edit]
) -> tuple[list[Edit], list[str]]:
    """Edits adding `from M import name` specs to a one-line `from M import a, b` statement of
    the block (as isort combines them), and the specs left to insert as statements of their own.
    Aliased names stay on lines of their own (isort's combine-as-imports is off)."""
    targets: dict[int, tuple[ast.ImportFrom, Edit, list[str]]] = {}
    left = []
    for spec in additions:
        new = ast.parse(spec).body[0]
        target = None
        if isinstance(new, ast.ImportFrom) and not new.level and _plain_names(new):
            target = next((s for s in block if _can_take(s, new.module, text, index)), None)
        if target is None:
            left.append(spec)
            continue
        start = index.offset(target.lineno, 0)
        span = Edit(start, start + len(index.line_text(target.lineno)), "")
        if any(_overlaps(span, e) for e in avoid):
            left.append(spec)
            continue
        names = targets.setdefault(target.lineno, (target, span, _plain_names(target)))[2]
        names.extend(n for n in _plain_names(new) if n not in names)
    edits = []
    for target, span, names in targets.values():
        merged = ", ".join(sorted(names, key=_member_key))
        line = text[span.start : span.end]
        comment = "  " + line[line.index("#") :] if "#" in line else ""
        edits.append(Edit(span.start, span.end, f"from {target.module} import {merged}{comment}"))
    return edits, left


def _plain_names(stmt: ast.ImportFrom) -> list[str]:
    """The names of `from M import a, b`, or [] where one has an alias or is a star."""
    if any(a.asname or a.name == "*" for a in stmt.names):
        return []
    return [a.name for a in stmt.names]


def _can_take(stmt: ast.stmt, module: str | None, text: str, index: LineIndex) -> bool:
    """A one-line, unparenthesized `from module import a, b` at column 0."""
    if not (isinstance(stmt, ast.ImportFrom) and stmt.module == module and not stmt.level):
        return False
    line = index.line_text(stmt.lineno)
    return (
        stmt.end_lineno == stmt.lineno
        and stmt.col_offset == 0
        and bool(_plain_names(stmt))
        and not any(mark in line for mark in ";(\\")
    )


def _member_key(name: str) -> tuple:
    """ruff's isort order of imported names (order-by-type): CONSTANTS, Classes, then the
    rest, each in case-insensitive natural order (`a2` before `a10`)."""
    if len(name) > 1 and name.upper() == name and name.lower() != name:
        kind = 0
    elif name[:1].isupper():
        kind = 1
    else:
        kind = 2
    return (kind, _natural(name.lower()), _natural(name))


def _natural(name: str) -> tuple:
    parts = re.split(r"(\d+)", name)
    return tuple(int(part) if i % 2 else part for i, part in enumerate(parts))


def _leading_imports(tree: ast.Module) -> list[ast.stmt]:
    """The module's first run of import statements (after the docstring)."""
    body = list(tree.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    block = []
    for stmt in body:
        if not isinstance(stmt, (ast.Import, ast.ImportFrom)):
            break
        block.append(stmt)
    return block


def _group_section(group: list[ast.stmt]) -> int:
    sections = [
        _section(s.module or "", s.level)
        if isinstance(s, ast.ImportFrom)
        else _section(s.names[0].name)
        for s in group
    ]
    return max(set(sections), key=sections.count)


def _first_code(tree: ast.Module, line: int) -> ast.stmt | None:
    return next((s for s in tree.body if s.lineno >= line), None)


def _insertion_line(tree: ast.Module) -> int:
    """Line before which new imports go: after the module's leading imports."""
    line = 1
    body = tree.body
    i = 0
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        if isinstance(body[0].value.value, str):  # the docstring
            line = body[0].end_lineno + 1  # type: ignore[operator]
            i = 1
    for stmt in body[i:]:
        if isinstance(stmt, (ast.Import, ast.ImportFrom)) or (
            isinstance(stmt, ast.Try)
            and all(isinstance(s, (ast.Import, ast.ImportFrom)) for s in stmt.body)
        ):
            line = stmt.end_lineno + 1  # type: ignore[operator]
            continue
        break
    return line


def _fix_imports_libcst(
    text: str, to_add: list[str], to_remove: list[tuple[str, str | None, str | None]]
) -> str:
    """The general path, for import statements text edits cannot rewrite safely."""
    import libcst as cst
    from libcst.codemod import CodemodContext
    from libcst.codemod.visitors import AddImportsVisitor, RemoveImportsVisitor

    module = cst.parse_module(text)
    context = CodemodContext()
    for spec in dict.fromkeys(to_add):
        mod, obj, asname = _parse_spec(spec)
        AddImportsVisitor.add_needed_import(context, mod, obj, asname)
    for mod, obj, asname in to_remove:
        RemoveImportsVisitor.remove_unused_import(context, mod, obj, asname)
    if to_remove:
        module = RemoveImportsVisitor(context).transform_module(module)
    module = AddImportsVisitor(context).transform_module(module)
    return module.code


def _binds_torch_otherwise(tree: ast.Module) -> bool:
    """An import other than a TorchScript module's binds the name `torch`."""
    for node in tree.body:
        for stmt in _top_level_imports(node):
            if isinstance(stmt, ast.Import):
                for a in stmt.names:
                    if a.asname in (None, "torch") and a.name.split(".")[0] == "torch":
                        if a.asname == "torch" or a.name not in TORCHSCRIPT_MODULES:
                            return True
            elif isinstance(stmt, ast.ImportFrom) and any(
                (a.asname or a.name) == "torch" for a in stmt.names
            ):
                return True
    return False


def _top_level_imports(node: ast.stmt) -> Iterable[ast.stmt]:
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        yield node
    elif isinstance(node, ast.Try):  # try/except ImportError shims
        for child in node.body:
            yield from _top_level_imports(child)


def _bound_imports(tree: ast.Module) -> dict[str, str]:
    bound: dict[str, str] = {}
    for node in tree.body:
        for stmt in _top_level_imports(node):
            if isinstance(stmt, ast.Import):
                for a in stmt.names:
                    if a.asname:
                        bound[a.asname] = a.name
                    else:
                        bound.setdefault(a.name.split(".")[0], a.name.split(".")[0])
            elif isinstance(stmt, ast.ImportFrom) and stmt.module and not stmt.level:
                for a in stmt.names:
                    bound[a.asname or a.name] = f"{stmt.module}.{a.name}"
    return bound


def _parse_spec(spec: str) -> tuple[str, str | None, str | None]:
    """'import a.b [as c]' or 'from a.b import c [as d]' -> (module, obj, asname)."""
    parsed = ImportSpec.parse(spec)
    return parsed.module, parsed.name, parsed.alias


def _already_bound(spec: str, bound: dict[str, str]) -> bool:
    module, obj, asname = _parse_spec(spec)
    if obj is None:
        name = asname or module.split(".")[0]
        return bound.get(name) == (module if asname else module.split(".")[0])
    return bound.get(asname or obj) == f"{module}.{obj}"


# --------------------------------------------------------------------------- a file


def validate(path: str, text: str) -> str | None:
    """None if `text` is well-formed for its file kind, else the reason."""
    if path.endswith((".py", ".pyi")):
        try:
            tree_of(text, path)
        except SyntaxError as exc:
            return f"line {exc.lineno}: {exc.msg}"
    elif path.endswith(".toml"):
        import tomllib

        try:
            tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            return str(exc)
    elif path.endswith((".yml", ".yaml")):
        import yaml

        try:
            list(yaml.safe_load_all(text))
        except yaml.YAMLError as exc:
            return str(exc).splitlines()[0]
    return None


def fix_rounds(
    path: str,
    text: str,
    analyze: Callable[[str], list[Finding]],
    newline: str = "\n",
    *,
    allowed: Collection[Applicability] = WRITABLE,
    findings: list[Finding] | None = None,
    replan: Callable[[list[Finding]], list[Finding]] | None = None,
) -> FileFix:
    """Run analyze/fix rounds on one file's text until nothing writable is left (tidy.fix_source
    then repairs the layout: what `migrate apply` writes).

    `findings` are the first round's (the planned scan's); later rounds analyse the new text
    and pass it through `replan`, so that a fix the repository planner held back stays held.
    """
    result = FileFix(path, text, text)
    current = text
    was_valid = validate(path, text) is None
    applied: list[Finding] = []
    findings = analyze(current) if findings is None else findings
    held: list[Held] = []
    for _ in range(MAX_ROUNDS):
        units, held = fix_units(findings, allowed)
        if not units:
            break
        taken, edits = take_units(units)
        new = apply_edits(current, edits, newline)
        if path.endswith((".py", ".pyi")):
            try:
                new = fix_imports(fill_emptied_blocks(new, newline), _import_specs(taken))
            except SyntaxError as exc:
                result.error = (
                    f"fix produced invalid code (line {exc.lineno}: {exc.msg}); left untouched"
                )
                return result
        problem = validate(path, new)
        if problem and was_valid:
            result.error = f"fix produced invalid code ({problem}); left untouched"
            return result
        if new == current:
            break
        applied.extend(taken)
        current = new
        findings = analyze(current)
        if replan is not None:
            findings = replan(findings)
    result.fixed = keep_endings(text, current) if current != text else text
    result.applied = applied
    result.remaining = findings
    result.held = held
    return result


_EMPTIED = re.compile(r"expected an indented block after .* on line (\d+)")


def fill_emptied_blocks(text: str, newline: str = "\n") -> str:
    """A block whose every statement a fix removed (two executor switches under an `if`,
    each dropped by its own finding) gets `pass`: each fix alone left a statement there."""
    for _ in range(50):
        try:
            ast.parse(text)
            return text
        except SyntaxError as exc:
            found = _EMPTIED.match(exc.msg or "")
            if found is None:
                return text
            lines = text.split(newline)
            header = int(found.group(1)) - 1
            end = header
            while end < len(lines) and not _ends_header(lines[end]):
                end += 1
            if end >= len(lines):
                return text
            indent = lines[header][: len(lines[header]) - len(lines[header].lstrip())]
            lines.insert(end + 1, f"{indent}    pass")
            text = newline.join(lines)
    return text


def _ends_header(line: str) -> bool:
    code = line.split("#", 1)[0].rstrip()
    return code.endswith(":")


def apply_units(path: str, text: str, units: Iterable[FixUnit], newline: str = "\n") -> str:
    """The file's text with exactly these units written (one round, no re-analysis), or
    ValueError naming why it cannot be (overlapping edits, invalid code): `apply --test`
    builds each trial's files from a subset of the units this way."""
    units = [u.view(path) for u in units]  # a unit spanning files: its edits in this one
    if not units:
        return text
    taken, edits = take_units(units)
    if len(taken) != sum(len(u.findings) for u in units):
        raise ValueError("two of the fixes overlap; they cannot be written together")
    new = apply_edits(text, edits, newline)
    if path.endswith((".py", ".pyi")):
        try:
            new = fix_imports(fill_emptied_blocks(new, newline), _import_specs(taken))
        except SyntaxError as exc:
            raise ValueError(f"fix produced invalid code (line {exc.lineno}: {exc.msg})") from None
    problem = validate(path, new)
    if problem and validate(path, text) is None:
        raise ValueError(f"fix produced invalid code ({problem})")
    return keep_endings(text, new)


def stale_temp_files(folder: str, before: float) -> list[tuple[str, int]]:
    """(name, pid) of the temp files in `folder` that a write of this tool left behind (a
    `kill -9`, a power cut): named as write_atomic names them, this user's, older than
    `before`, and written by a process that is no longer running."""
    try:
        names = [n for n in os.listdir(folder) if n.endswith(TEMP_SUFFIX)]
    except OSError:
        return []
    stale = []
    for name in names:
        found = TEMP_NAME.fullmatch(name)
        if found is None:
            continue
        pid = int(found["pid"])
        try:
            st = os.lstat(os.path.join(folder, name))
        except OSError:
            continue
        mine = not hasattr(os, "getuid") or st.st_uid == os.getuid()
        if stat.S_ISREG(st.st_mode) and mine and st.st_mtime < before and not pid_alive(pid):
            stale.append((name, pid))
    return sorted(stale)


def pid_alive(pid: int) -> bool:
    """Whether a process with this id runs (one of another user's counts as running)."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: it runs, as someone else
        return True
    return True


def dirty_files(paths: Iterable[Path]) -> dict[Path, str]:
    """Files inside a git work tree that git could not restore: modified, untracked or
    ignored, each with its porcelain status (`M`, `??`, `!!`)."""
    dirty: dict[Path, str] = {}
    by_dir: dict[Path, list[Path]] = {}
    for p in paths:
        # The folder of the entry itself, not of a symlink's target.
        by_dir.setdefault(Path(os.path.abspath(p)).parent.resolve(), []).append(p)
    tops: dict[Path, list[Path]] = {}
    for directory, files in by_dir.items():
        try:
            proc = gitsafe.run(["rev-parse", "--show-toplevel"], directory, timeout=30)
        except gitsafe.GitUnavailable:
            continue
        if proc.returncode != 0:
            if b"dubious ownership" in proc.stderr:
                # A work tree owned by someone else: git will not read it for us (and we do
                # not widen safe.directory), so nothing there is known to be committed.
                dirty.update((f, "?") for f in files)
            continue
        top = Path(proc.stdout.decode("utf-8", "surrogateescape").strip()).resolve()
        tops.setdefault(top, []).extend(files)
    for top, files in tops.items():
        rel = {
            os.path.relpath(Path(os.path.abspath(f)).parent.resolve() / f.name, top): f
            for f in files
        }
        # --ignored=traditional with --untracked-files=all names each ignored file, so a
        # file named on the command line inside an ignored folder is caught too.
        args = ["status", "--porcelain", "-z", "--untracked-files=all", "--ignored=traditional"]
        try:
            proc = gitsafe.run([*args, "--", *rel], top)
        except gitsafe.GitUnavailable:
            proc = None
        if proc is None or proc.returncode != 0:
            # git could not tell: treat every file as unsafe rather than overwrite blind.
            dirty.update((f, "?") for f in files)
            continue
        entries = proc.stdout.decode("utf-8", "surrogateescape").split("\0")
        for entry in entries:
            if len(entry) > 3 and entry[3:] in rel:
                dirty[rel[entry[3:]]] = entry[:2].strip()
        # status does not look at files marked assume-unchanged or skip-worktree.
        try:
            hidden = gitsafe.hidden_changes(top, [r for r in rel if rel[r] not in dirty])
        except gitsafe.GitUnavailable:
            hidden = {r: "?" for r in rel}
        for name, mark in hidden.items():
            dirty.setdefault(rel[name], mark)
    return dirty
