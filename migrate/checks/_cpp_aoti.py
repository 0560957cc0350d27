"""Under `--intent drop`: a C++ file's TorchScript loader rewritten to AOTInductor's package
loader, for the shapes servers write; any other use of the runtime leaves the file as it is.

Known shapes (the module's name is `m`, each statement may sit anywhere in the file):

    #include <torch/script.h>                   -> the package loader's header, <torch/types.h>
    torch::jit::script::Module m = torch::jit::load(p);   (`torch::jit::Module`, `auto` too)
                                                -> torch::inductor::AOTIModelPackageLoader m(p);
    torch::jit::script::Module m;  ...  m = torch::jit::load(p);
                                                -> a std::unique_ptr of the loader, make_unique
    torch::jit::script::Module m_;  ...  : m_(torch::jit::load(p))
                                                -> a loader member, : m_(p)
    m.eval();  m.to(device);                    -> deleted (a package is compiled for inference
                                                   on the device it was built for)
    m.forward(args).toTensor()                  -> m.run(args)[0]
    std::vector<torch::jit::IValue> args        -> std::vector<at::Tensor> args
    torch::jit::setFusionStrategy(...); ...     -> deleted (runtime settings with no counterpart)

A path literal that names an archive (`"model.pt"`), as the load's argument or in the
initializer of the variable passed to it, becomes the package `migrate convert model.pt --aoti`
writes (`"model.aoti.pt2"`). The rewrite is all or nothing per file: the first use that fits
no shape is the reason it is not made, and each finding then carries its own recipe.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field

from migrate.analysis import native_source
from migrate.analysis.native_source import CppUse, Token
from migrate.findings import Edit

LOADER = "torch::inductor::AOTIModelPackageLoader"
LOADER_HEADER = "torch/csrc/inductor/aoti_package/model_package_loader.h"
# What <torch/script.h> gave a server besides the runtime: tensors, factories, grad mode.
TENSOR_HEADER = "torch/types.h"
PACKAGE_SUFFIX = ".aoti.pt2"
MODULE_TYPES = frozenset({"torch::jit::script::Module", "torch::jit::Module"})
RUNTIME_HEADERS = frozenset({"torch/script.h", "torch/jit.h"})
STATEMENT_START = frozenset({";", "{", "}"})
DROPPED_MEMBERS = frozenset({"eval", "to"})


def package_for(archive: str) -> str:
    """`model.pt` -> `model.aoti.pt2`, the name `migrate convert ARCHIVE --aoti` writes."""
    base = posixpath.basename(archive)
    stem = base.rsplit(".", 1)[0]
    return archive[: len(archive) - len(base)] + stem + PACKAGE_SUFFIX


@dataclass
class Rewrite:
    """The edits of a file's move, by the use they fix (every use has at least one), or the
    reason (with its line offset) why the file stays as it is."""

    edits: dict[int, list[Edit]] = field(default_factory=dict)
    packages: list[tuple[str, str]] = field(default_factory=list)  # (archive, package)
    refusal: str = ""
    refusal_at: int = 0


class _Refused(Exception):
    def __init__(self, why: str, at: int) -> None:
        super().__init__(why)
        self.why = why
        self.at = at


class _File:
    """One pass over a file's tokens, collecting edits until a use fits no shape."""

    def __init__(
        self, text: str, tokens: list[Token], uses: list[CppUse], settings: frozenset[str]
    ) -> None:
        self.text = text
        self.tokens = tokens
        self.uses = uses
        self.settings = settings
        self.at = {t.start: k for k, t in enumerate(tokens)}
        self.use_at = {u.start: k for k, u in enumerate(uses)}
        self.out = Rewrite()
        # name -> (object | pointer, its declaration's token, the use its edits ride with)
        self.modules: dict[str, tuple[str, int, int]] = {}
        self.vectors: set[str] = set()  # std::vector<IValue> names made tensor vectors
        # Modules declared without a value (`Module m;`), by name: (type use, its type edit's
        # span, the declared name's token); loaded later by an assignment (`m = load(p)`: a
        # pointer) or a constructor's member initializer (`: m(load(p))`: an object).
        self.declared: dict[str, tuple[int, tuple[int, int], int]] = {}
        self.assigned: dict[str, list[tuple[int, Edit]]] = {}
        self.initialised: dict[str, tuple[int, Edit, int]] = {}  # name -> (use, edit, token)

    # ---- helpers ----------------------------------------------------------------------
    def refuse(self, why: str, at: int) -> _Refused:
        return _Refused(why, at)

    def tok(self, k: int) -> Token | None:
        return self.tokens[k] if 0 <= k < len(self.tokens) else None

    def text_at(self, k: int) -> str:
        t = self.tok(k)
        return t.text if t is not None and t.kind != "string" else ""

    def close(self, k: int) -> int:
        """Index of the bracket closing the one at `k`."""
        pairs = {"(": ")", "{": "}", "[": "]", "<": ">"}
        open_, shut = self.tokens[k].text, pairs[self.tokens[k].text]
        depth = 0
        for j in range(k, len(self.tokens)):
            t = self.tokens[j]
            if t.kind == "punct" and t.text == open_:
                depth += 1
            elif t.kind == "punct" and t.text == shut:
                depth -= 1
                if depth == 0:
                    return j
        raise self.refuse("an unbalanced bracket", self.tokens[k].start)

    def statement_end(self, k: int) -> int:
        """Index of the `;` ending the statement token `k` is in (brackets skipped)."""
        j = k
        while j < len(self.tokens):
            t = self.tokens[j]
            if t.kind == "punct" and t.text in ("(", "{", "["):
                j = self.close(j) + 1
                continue
            if t.kind == "punct" and t.text == ";":
                return j
            j += 1
        raise self.refuse("a statement without its `;`", self.tokens[k].start)

    def whole_lines(self, start: int, end: int) -> Edit:
        """A deletion of text[start:end], with its line when nothing else is on it."""
        line_start = self.text.rfind("\n", 0, start) + 1
        line_end = self.text.find("\n", end)
        line_end = len(self.text) if line_end < 0 else line_end
        if not self.text[line_start:start].strip() and not self.text[end:line_end].strip():
            return Edit(line_start, min(line_end + 1, len(self.text)), "")
        return Edit(start, end, "")

    def add(self, use: int, *edits: Edit) -> None:
        self.out.edits.setdefault(use, []).extend(edits)

    def chain_start(self, k: int) -> int:
        """Offset where a name at token `k` starts, a leading global `::` included."""
        prev, before = self.tok(k - 1), self.tok(k - 2)
        if prev is not None and prev.text == "::" and (before is None or before.kind != "name"):
            return prev.start
        return self.tokens[k].start

    def after_chain(self, k: int) -> int:
        """Index of the token after the `a::b::c` chain starting at `k`."""
        j = k + 1
        while self.text_at(j) == "::" and self.tok(j + 1) is not None:
            j += 2
        return j

    # ---- the shapes ------------------------------------------------------------------
    def run(self) -> Rewrite:
        used, aliases = native_source.declared_namespaces(self.tokens)
        for scope in [*used, *aliases.values()]:
            if scope[:2] == ("torch", "jit"):
                raise self.refuse(
                    "a `using` or alias of torch::jit names the runtime unqualified",
                    self.declaration_of_jit(),
                )
        includes = [k for k, u in enumerate(self.uses) if u.what == "include"]
        names = [k for k, u in enumerate(self.uses) if u.what == "name"]
        for k in names:
            if k not in self.out.edits:
                self.name_use(k)
        self.resolve_declared()
        self.module_uses()
        self.include_edits(includes)
        for k, u in enumerate(self.uses):
            if k not in self.out.edits:  # pragma: no cover - every shape adds its edit
                raise self.refuse(f"`{u.symbol}` has no known rewrite", u.start)
        return self.out

    def declaration_of_jit(self) -> int:
        """Where the first `using namespace torch::jit;` (or alias, using-declaration) is."""
        for k, t in enumerate(self.tokens):
            if t.text in ("using", "namespace") and t.kind == "name":
                j = k + 1
                while self.tok(j) is not None and self.text_at(j) not in (";", "{"):
                    if self.text_at(j) == "torch" and self.text_at(j + 2) == "jit":
                        return t.start
                    j += 1
        return 0

    def name_use(self, k: int) -> None:
        use = self.uses[k]
        i = self.at[use.start]
        if use.symbol in MODULE_TYPES:
            self.declaration(k, i)
        elif use.symbol == "torch::jit::load":
            self.assignment(k, i)
        elif use.symbol == "torch::jit::IValue":
            self.value_vector(k, i)
        elif use.symbol.split("::")[2] in self.settings:  # torch::jit::<setting>[::...]
            self.dropped_statement(k, i)
        else:
            raise self.refuse(f"`{use.symbol}` has no AOTInductor counterpart", use.start)

    def declaration(self, k: int, i: int) -> None:
        """`Module m = torch::jit::load(p);` or `Module m;` (assigned later)."""
        j = self.after_chain(i)
        name = self.tok(j)
        if name is None or name.kind != "name" or self.text_at(j + 1) not in ("=", ";"):
            raise self.refuse(
                f"`{self.uses[k].symbol}` is used other than to declare the loaded module",
                self.uses[k].start,
            )
        type_edit = Edit(self.chain_start(i), self.tokens[j - 1].end, LOADER)
        if self.text_at(j + 1) == ";":
            self.declared[name.text] = (k, (type_edit.start, type_edit.end), j)
            return
        load = self.uses_at(j + 2, "torch::jit::load")
        if load is None:
            raise self.refuse(f"`{name.text}` is not initialised by torch::jit::load", name.start)
        self.modules[name.text] = ("object", j, k)
        self.add(k, type_edit)
        self.add(load, self.construct(load, name, j))

    def uses_at(self, token: int, symbol: str) -> int | None:
        t = self.tok(token)
        if t is None:
            return None
        start = t.start
        if t.text == "::":  # a global `::torch::jit::load`
            nxt = self.tok(token + 1)
            start = nxt.start if nxt is not None else start
        use = self.use_at.get(start)
        return use if use is not None and self.uses[use].symbol == symbol else None

    def load_call(self, load: int) -> tuple[int, int, list[Token]]:
        """(index of `(`, index of `)`, the argument's tokens) of a one-argument load."""
        i = self.at[self.uses[load].start]
        j = self.after_chain(i)
        if self.text_at(j) != "(":
            raise self.refuse("torch::jit::load is not called", self.uses[load].start)
        end = self.close(j)
        inner = self.tokens[j + 1 : end]
        depth = 0
        for t in inner:
            if t.kind == "punct" and t.text in ("(", "{", "["):
                depth += 1
            elif t.kind == "punct" and t.text in (")", "}", "]"):
                depth -= 1
            elif t.kind == "punct" and t.text == "," and depth == 0:
                raise self.refuse(
                    "torch::jit::load takes a device or extra files here (AOTInductor packages "
                    "are compiled for one device)",
                    self.uses[load].start,
                )
        if not inner:
            raise self.refuse("torch::jit::load without a path", self.uses[load].start)
        return j, end, inner

    def path_argument(self, load: int, inner: list[Token]) -> str:
        """The argument's text, an archive literal renamed to its package; the initializer
        of a variable passed instead gets the same rename."""
        start, end = inner[0].start, inner[-1].end
        if len(inner) == 1 and inner[0].kind == "string":
            return self.renamed_literal(inner[0], start, end)
        if len(inner) == 1 and inner[0].kind == "name":
            self.rename_initializer(load, inner[0].text)
        return self.text[start:end]

    def renamed_literal(self, tok: Token, start: int, end: int) -> str:
        source = self.text[start:end]
        if not tok.text.lower().endswith(native_source.ARCHIVE_SUFFIXES):
            return source
        package = package_for(tok.text)
        self.out.packages.append((tok.text, package))
        return source.replace(tok.text, package, 1)

    def rename_initializer(self, load: int, var: str) -> None:
        """`const std::string path = argc > 1 ? argv[1] : "model.pt";`: its archive literals."""
        for j, t in enumerate(self.tokens):
            if t.start >= self.uses[load].start:
                return
            if t.kind == "name" and t.text == var and self.text_at(j + 1) == "=":
                if self.text_at(j - 1) in (".", "->", "::"):
                    continue
                end = self.statement_end(j)
                for s in self.tokens[j + 2 : end]:
                    if s.kind == "string" and s.text.lower().endswith(
                        native_source.ARCHIVE_SUFFIXES
                    ):
                        new = self.renamed_literal(s, s.start, s.end)
                        self.add(load, Edit(s.start, s.end, new))

    def construct(self, load: int, name: Token, name_index: int) -> Edit:
        """` = torch::jit::load(p)` after the declared name -> `(p')`."""
        _, end, inner = self.load_call(load)
        arg = self.path_argument(load, inner)
        return Edit(name.end, self.tokens[end].end, f"({arg})")

    def assignment(self, k: int, i: int) -> None:
        """`m = torch::jit::load(p);` of a module declared without a value; `auto m = ...`."""
        eq, target = self.tok(i - 1), self.tok(i - 2)
        if self.text_at(i - 1) == "::":
            eq, target = self.tok(i - 2), self.tok(i - 3)
            i -= 1
        if (
            eq is not None
            and eq.text == "("
            and target is not None
            and target.kind == "name"
            and self.text_at(i - 3) in (":", ",")
        ):
            self.member_initializer(k, target, i - 2)
            return
        if eq is None or eq.text != "=" or target is None or target.kind != "name":
            raise self.refuse(
                "torch::jit::load's result is not stored in a module variable", self.uses[k].start
            )
        before = self.tok(i - 3)
        if before is not None and before.text == "auto":
            self.modules[target.text] = ("object", i - 2, k)
            self.add(k, Edit(before.start, before.end, LOADER))
            self.add(k, self.construct(k, target, i - 2))
            return
        _, end, inner = self.load_call(k)
        arg = self.path_argument(k, inner)
        start = self.chain_start(self.at[self.uses[k].start])
        edit = Edit(start, self.tokens[end].end, f"std::make_unique<{LOADER}>({arg})")
        self.assigned.setdefault(target.text, []).append((k, edit))

    def member_initializer(self, k: int, name: Token, name_index: int) -> None:
        """`: module_(torch::jit::load(path))` -> `: module_(path)`."""
        _, end, inner = self.load_call(k)
        arg = self.path_argument(k, inner)
        outer = self.close(name_index + 1)
        if outer != end + 1:
            raise self.refuse(
                f"`{name.text}(...)` is initialised with more than the load", name.start
            )
        edit = Edit(self.tokens[name_index + 1].start, self.tokens[outer].end, f"({arg})")
        self.initialised[name.text] = (k, edit, name_index)

    def resolve_declared(self) -> None:
        """Modules declared without a value become a loader object (initialised in a
        constructor's member list) or a `std::unique_ptr` of one (assigned a load)."""
        for name in [*self.assigned, *self.initialised]:
            if name not in self.declared:
                k = (self.assigned.get(name) or [(self.initialised[name][0], None)])[0][0]
                raise self.refuse(
                    f"`{name}` is loaded here but not declared as a module here",
                    self.uses[k].start,
                )
        for name, (k, (start, end), decl) in self.declared.items():
            if name in self.assigned and name in self.initialised:
                raise self.refuse(f"`{name}` is both initialised and assigned", start)
            if name in self.initialised:
                load, edit, _ = self.initialised[name]
                self.modules[name] = ("object", decl, load)
                self.add(k, Edit(start, end, LOADER))
                self.add(load, edit)
            elif name in self.assigned:
                self.modules[name] = ("pointer", decl, self.assigned[name][0][0])
                self.add(k, Edit(start, end, f"std::unique_ptr<{LOADER}>"))
                for load, edit in self.assigned[name]:
                    self.add(load, edit)
            else:
                # A member loaded in another file (a header's `Module module_;`): moving the
                # declaration alone would break that file's load.
                raise self.refuse(f"`{name}` is declared here but loaded elsewhere", start)

    def value_vector(self, k: int, i: int) -> None:
        """`std::vector<torch::jit::IValue> inputs` -> `std::vector<at::Tensor> inputs`."""
        j = self.after_chain(i)
        if not (
            self.text_at(i - 1) == "<"
            and self.text_at(i - 2) == "vector"
            and self.text_at(i - 3) == "::"
            and self.text_at(i - 4) == "std"
            and self.text_at(j) == ">"
            and (self.tok(j + 1) is not None and self.tokens[j + 1].kind == "name")
        ):
            raise self.refuse(
                "torch::jit::IValue is used other than as a vector of inputs (a package takes "
                "and returns tensors)",
                self.uses[k].start,
            )
        self.vectors.add(self.tokens[j + 1].text)
        self.add(k, Edit(self.chain_start(i), self.tokens[j - 1].end, "at::Tensor"))

    def dropped_statement(self, k: int, i: int) -> None:
        """A runtime setting's whole statement, deleted with the uses inside it."""
        start = self.chain_start(i)
        prev = self.tok(i - 2 if self.text_at(i - 1) == "::" else i - 1)
        if prev is not None and prev.text not in STATEMENT_START:
            raise self.refuse(
                f"`{self.uses[k].symbol}` is used inside an expression", self.uses[k].start
            )
        end = self.statement_end(i)
        edit = self.whole_lines(start, self.tokens[end].end)
        for u, other in enumerate(self.uses):
            if start <= other.start < self.tokens[end].end:
                self.add(u, edit)

    def module_uses(self) -> None:
        """Every use of a loaded module's name: forward(...).toTensor(), eval(), to()."""
        for name, (style, decl, load) in self.modules.items():
            arrow = "->" if style == "pointer" else "."
            for j, t in enumerate(self.tokens):
                if t.kind != "name" or t.text != name or j == decl:
                    continue
                if self.text_at(j - 1) in (".", "->", "::"):
                    continue
                if self.text_at(j + 1) == "=":  # the later load: rewritten by assignment
                    if self.uses_at(j + 2, "torch::jit::load") is None:
                        raise self.refuse(f"`{name}` is assigned something else", t.start)
                    continue
                if name in self.initialised and j == self.initialised[name][2]:
                    continue  # the member initializer: rewritten by member_initializer
                member = self.text_at(j + 2) if self.text_at(j + 1) == "." else ""
                if member in DROPPED_MEMBERS and self.text_at(j + 3) == "(":
                    end = self.statement_end(j)
                    if self.text_at(j - 1) not in STATEMENT_START:
                        raise self.refuse(f"`{name}.{member}(...)` is used as a value", t.start)
                    self.add(load, self.whole_lines(t.start, self.tokens[end].end))
                elif member == "forward" and self.text_at(j + 3) == "(":
                    self.forward_call(load, name, arrow, j)
                else:
                    what = f"`{name}.{member}`" if member else f"`{name}` itself"
                    raise self.refuse(
                        f"{what} is used, which AOTInductor's loader does not have", t.start
                    )

    def forward_call(self, load: int, name: str, arrow: str, j: int) -> None:
        """`m.forward(args).toTensor()` -> `m.run(args)[0]`."""
        open_ = j + 3
        close = self.close(open_)
        inner = self.tokens[open_ + 1 : close]
        if not (
            self.text_at(close + 1) == "."
            and self.text_at(close + 2) == "toTensor"
            and self.text_at(close + 3) == "("
            and self.text_at(close + 4) == ")"
        ):
            raise self.refuse(
                f"`{name}.forward(...)` is not read with `.toTensor()` (a package returns a "
                "vector of tensors: index it)",
                self.tokens[j].start,
            )
        if len(inner) == 1 and inner[0].kind == "name" and inner[0].text not in self.vectors:
            raise self.refuse(
                f"`{name}.forward({inner[0].text})` takes a vector this file does not declare "
                "as std::vector<torch::jit::IValue>",
                self.tokens[j].start,
            )
        args = self.text[inner[0].start : inner[-1].end] if inner else ""
        end = self.tokens[close + 4].end
        self.add(load, Edit(self.tokens[j].end, end, f"{arrow}run({args})[0]"))

    def include_edits(self, includes: list[int]) -> None:
        """The runtime's headers out, the loader's in (once, where the first one was)."""
        header = f"#include <{TENSOR_HEADER}>"
        if self.modules:
            header = f"#include <{LOADER_HEADER}>\n" + header
        pointer = any(style == "pointer" for style, _, _ in self.modules.values())
        if pointer and not any(t.kind == "include" and t.text == "memory" for t in self.tokens):
            header += "\n#include <memory>"
        placed = False
        for k in includes:
            use = self.uses[k]
            if use.symbol in RUNTIME_HEADERS and not placed:
                self.add(k, Edit(use.start, use.end, header))
                placed = True
            elif use.symbol in RUNTIME_HEADERS or use.symbol.startswith("torch/csrc/jit/"):
                self.add(k, self.whole_lines(use.start, use.end))
            else:
                raise self.refuse(f"`<{use.symbol}>` is not a server's runtime header", use.start)
        if not placed and self.modules:
            first = next((t for t in self.tokens if t.kind == "include"), None)
            if first is None:
                raise self.refuse("the file includes no header to put the loader's beside", 0)
            load = next(iter(self.out.edits))
            self.add(load, Edit(first.start, first.start, header + "\n"))


def rewrite(
    text: str, tokens: list[Token], uses: list[CppUse], settings: frozenset[str]
) -> Rewrite:
    """The file's move to AOTInductor's loader, or why it is not made."""
    work = _File(text, tokens, uses, settings)
    try:
        return work.run()
    except _Refused as exc:
        return Rewrite(refusal=exc.why, refusal_at=exc.at)


def recipe(use: CppUse) -> str:
    """The exact edit for one use, where the file is not rewritten."""
    last = use.symbol.rsplit("::", 1)[-1]
    if use.what == "include":
        return (
            f"replace `#include <{use.symbol}>` by `#include <{LOADER_HEADER}>` and "
            f"`#include <{TENSOR_HEADER}>`"
        )
    if use.symbol in MODULE_TYPES:
        return (
            f"declare `{LOADER} name(path);` instead (a `std::unique_ptr<{LOADER}>` when it is "
            "assigned later)"
        )
    if use.symbol == "torch::jit::load":
        return (
            f"construct `{LOADER}` from the package `migrate convert ARCHIVE --aoti` writes "
            "(`<stem>.aoti.pt2`) and call `loader.run({x})[0]` for `forward({x}).toTensor()`"
        )
    if last in native_source.VALUES:
        return (
            "pass a `std::vector<at::Tensor>` to `loader.run(...)`, which returns one (index it "
            "instead of `.toTensor()`/`.toTuple()`)"
        )
    return "no AOTInductor counterpart: delete it or rewrite it by hand"
