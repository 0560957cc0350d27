"""The imports a fix leaves right: those the new code needs are added where isort would put
them, and TorchScript imports it no longer uses are dropped. Text edits at `ast` positions;
libcst only where a statement cannot be rewritten as text safely.
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Iterable

from migrate.analysis.astwalk import walk_tree
from migrate.analysis.parsed import tree_of
from migrate.checks.base import Edit, LineIndex
from migrate.findings import ImportSpec
from migrate.fix.edits import apply_edits, edits_overlap
from migrate.fix.source_text import newline_of

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


def _used_names(tree: ast.Module) -> set[str]:
    return {n.id for n in walk_tree(tree) if isinstance(n, ast.Name)}


def _attribute_chains(tree: ast.Module) -> set[str]:
    chains = set()
    for node in walk_tree(tree):
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
        if any(edits_overlap(span, e) for e in avoid):
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
