"""Static check of a tree's model artifacts: does every load read a file that something writes?

Producers and consumers are matched by format (TorchScript archive, lite-interpreter file,
torch.export `.pt2`, ExecuTorch `.pte`) and by path. A path is resolved from string literals,
module constants (also imported from another module of the tree) and `os.path.join` of those;
anything else (a parameter, an environment lookup) is unknown, and an unknown path on either
side matches any path of the same format. Only `ast` is used: no torch, nothing is run.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

UNKNOWN = None

# Call name (last dotted parts) -> format; the path is the first argument unless noted.
CONSUMERS = {
    "torch.jit.load": "torchscript",
    "_load_for_lite_interpreter": "lite",
    "torch.export.load": "pt2",
    "load_program": "pte",
    "_load_for_executorch": "pte",
}
# Producers whose path is the second argument.
PRODUCERS_2ND = {"torch.jit.save": "torchscript", "torch.export.save": "pt2"}
# Method producers whose path is the first argument.
PRODUCERS_METHOD = {"save": "torchscript", "_save_for_lite_interpreter": "lite"}


@dataclass(frozen=True)
class Use:
    file: str
    line: int
    format: str
    path: str | None

    def __str__(self) -> str:
        return f"{self.file}:{self.line} {self.format} {self.path or '<unknown path>'}"


def dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = dotted(node.value)
        return f"{inner}.{node.attr}" if inner else node.attr
    if isinstance(node, ast.Call):  # Runtime.get().load_program: keep the method part
        return dotted(node.func)
    return ""


def matches(name: str, pattern: str) -> bool:
    return name == pattern or name.endswith("." + pattern)


class Tree:
    """The Python files under root, parsed once, with their module-level string constants."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.modules: dict[str, ast.Module] = {}
        self.files: dict[str, str] = {}
        for path in sorted(root.rglob("*.py")):
            rel = path.relative_to(root)
            module = ".".join(rel.with_suffix("").parts).removesuffix(".__init__")
            self.modules[module] = ast.parse(path.read_text(encoding="utf-8"))
            self.files[module] = rel.as_posix()
        self._constants: dict[str, dict[str, ast.expr]] = {}
        self._imports: dict[str, dict[str, tuple[str, str]]] = {}
        for name, tree in self.modules.items():
            consts: dict[str, ast.expr] = {}
            imports: dict[str, tuple[str, str]] = {}
            for stmt in tree.body:
                if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
                    target = stmt.targets[0]
                    if isinstance(target, ast.Name):
                        consts[target.id] = stmt.value
                elif isinstance(stmt, ast.ImportFrom) and stmt.module and not stmt.level:
                    for alias in stmt.names:
                        imports[alias.asname or alias.name] = (stmt.module, alias.name)
            self._constants[name] = consts
            self._imports[name] = imports

    def qualify(self, module: str, name: str) -> str:
        """`load` imported with `from torch.jit import load` -> `torch.jit.load`."""
        head, _, rest = name.partition(".")
        if head in self._imports.get(module, {}):
            source, original = self._imports[module][head]
            return ".".join(filter(None, (source, original, rest)))
        return name

    def resolve(self, module: str, node: ast.expr, depth: int = 0) -> str | None:
        """The string a path expression evaluates to, or UNKNOWN."""
        if depth > 10:
            return UNKNOWN
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        if isinstance(node, ast.Name):
            if node.id in self._constants.get(module, {}):
                return self.resolve(module, self._constants[module][node.id], depth + 1)
            if node.id in self._imports.get(module, {}):
                source, name = self._imports[module][node.id]
                if source in self.modules and name in self._constants[source]:
                    return self.resolve(source, self._constants[source][name], depth + 1)
            return UNKNOWN
        if isinstance(node, ast.Call) and dotted(node.func) in ("os.path.join", "join"):
            parts = [self.resolve(module, arg, depth + 1) for arg in node.args]
            if any(part is UNKNOWN for part in parts):
                return UNKNOWN
            return "/".join(parts)  # type: ignore[arg-type]
        if isinstance(node, ast.Call) and dotted(node.func) in ("pathlib.Path", "Path", "str"):
            return self.resolve(module, node.args[0], depth + 1) if node.args else UNKNOWN
        return UNKNOWN

    def uses(self) -> tuple[list[Use], list[Use]]:
        """(producers, consumers) of model artifacts in the whole tree."""
        producers: list[Use] = []
        consumers: list[Use] = []
        for module, tree in self.modules.items():
            for node in ast.walk(tree):
                if isinstance(node, ast.Call):
                    found = self.classify(module, node)
                    if found is not None:
                        role, fmt, arg = found
                        path = UNKNOWN if arg is None else self.resolve(module, arg)
                        use = Use(self.files[module], node.lineno, fmt, path)
                        (producers if role == "producer" else consumers).append(use)
        return producers, consumers

    def classify(self, module: str, node: ast.Call) -> tuple[str, str, ast.expr | None] | None:
        """("producer" | "consumer", format, path argument) for an artifact call, else None."""
        name = self.qualify(module, dotted(node.func))
        args = list(node.args) + [None, None]
        for pattern, fmt in CONSUMERS.items():
            if matches(name, pattern):
                return "consumer", fmt, args[0]
        for pattern, fmt in PRODUCERS_2ND.items():
            if matches(name, pattern):
                return "producer", fmt, args[1]
        if name == "torch.save":  # a state dict or tensors, not a model archive
            return None
        method = name.rsplit(".", 1)[-1]
        if "." in name and method in PRODUCERS_METHOD:
            return "producer", PRODUCERS_METHOD[method], args[0]
        if method == "write_bytes" and isinstance(node.func, ast.Attribute):
            # pathlib.Path(path).write_bytes(program.buffer): an ExecuTorch program, unless
            # the path is known to name something else.
            target = node.func.value
            path = target.args[0] if isinstance(target, ast.Call) and target.args else None
            resolved = None if path is None else self.resolve(module, path)
            if path is not None and (resolved is UNKNOWN or resolved.endswith(".pte")):
                return "producer", "pte", path
        return None


def unmatched_consumers(root: Path, separate: Callable[[str], str] | None = None) -> list[Use]:
    """Loads of an artifact that no producer in the tree writes (same format and path).

    `separate(file)` names the project a file belongs to where one tree holds several:
    a producer then feeds only the consumers of its own project.
    """
    producers, consumers = Tree(root).uses()
    project = separate or (lambda file: "")
    left = []
    for consumer in consumers:
        same_format = [
            p
            for p in producers
            if p.format == consumer.format and project(p.file) == project(consumer.file)
        ]
        if not any(
            p.path is UNKNOWN or consumer.path is UNKNOWN or p.path == consumer.path
            for p in same_format
        ):
            left.append(consumer)
    return left
