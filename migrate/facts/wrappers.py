"""The repository's own TorchScript wrappers in the artifact flow (issue 27 item 7).

A call of a wrapper that writes the archive to its path parameter
(`convert_to_torchscript(net, DENOISE_PATH)`, `save_net_with_metadata(m, PATH)`) is a
producer of the file that call names; one of a wrapper that loads from its path parameter is
a consumer. Their keys are evaluated at the call site, as any other path is (literals,
constants, imported ones...), so a wrapper that saves and a wrapper that loads, or a plain
`torch.jit.load`, of one path are linked. The wrappers are found by
migrate.checks._repo_wrappers (MIG121 reports the same calls); callees are resolved through
imports and package re-exports (Repo.module_binding).
"""

from __future__ import annotations

import ast

from migrate.checks._repo_wrappers import Wrapper, find_wrappers
from migrate.facts._repo import FileIndex, Repo
from migrate.scan.textsearch import WholeWords

WRAPPER_API = "wrapper"  # Site.api prefix: "wrapper medlib.utils.save_net_with_metadata"


def find_wrappers_in(repo: Repo) -> dict[tuple[str, str], Wrapper]:
    """Every wrapper of the repository, by (module, function name)."""
    found: dict[tuple[str, str], Wrapper] = {}
    for f in repo:
        text = f.src.text
        if "jit" not in text or "def " not in text:
            continue
        for name, w in find_wrappers(f.ctx).items():
            found[(f.module, name)] = w
    return found


def wrapper_calls(repo: Repo, wrappers: dict[tuple[str, str], Wrapper]):
    """(file, call, wrapper) for every call of a wrapper in the repository."""
    if not wrappers:
        return
    names = frozenset(name for _, name in wrappers)
    words = WholeWords(names)
    for f in repo:
        if not words.search(f.src.text):
            continue
        for call in f.calls(names):
            w = _callee(repo, f, call, wrappers)
            if w is not None:
                yield f, call, w


def _callee(repo: Repo, f: FileIndex, call: ast.Call, wrappers) -> Wrapper | None:
    func = call.func
    qual = f.qualname(func)
    if qual is None:
        if isinstance(func, ast.Name) and f.lookup(func.id, f.table.scope_for(func))[0] == "local":
            return wrappers.get((f.module, func.id))
        return None
    found = repo.module_binding(qual)
    if found is None:
        return None
    target, name = found
    return wrappers.get((target.module, name))


def wrapper_sites(repo: Repo, make_site) -> list:
    """The producer and consumer Sites of the wrapper calls (see the module docstring);
    `make_site(repo, file, call, role, api, path)` builds one (artifacts._make)."""
    sites = []
    for f, call, w in wrapper_calls(repo, find_wrappers_in(repo)):
        roles = w.call_roles(call)
        args = w.bound(call) or {}
        for role, spec in (("producer", w.producer), ("consumer", w.consumer)):
            if role in roles and spec is not None:
                api = f"{WRAPPER_API} {w.qual}"
                sites.append(make_site(repo, f, call, role, api, args.get(spec.param)))
    return sites
