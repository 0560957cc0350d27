"""Rule data (rules/*.yaml) joined to the check classes that implement it."""

from __future__ import annotations

import fnmatch
import functools
import hashlib
import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from migrate.findings import Applicability, FixKind

_PACKAGE_DIR = Path(__file__).resolve().parent


def rules_dir() -> Path:
    """rules/ sits beside the package in a checkout and inside it (migrate/_rules) in a wheel."""
    for candidate in (_PACKAGE_DIR / "_rules", _PACKAGE_DIR.parent / "rules"):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError("rule definitions not found (expected migrate/_rules or rules/)")


def cache_home() -> Path:
    """$MIGRATE_CACHE_DIR, else $XDG_CACHE_HOME/torchscript-migrate or ~/.cache/..."""
    env = os.environ.get("MIGRATE_CACHE_DIR")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "torchscript-migrate"


@dataclass(frozen=True)
class Rule:
    code: str
    name: str
    title: str
    fix: FixKind
    target: str  # "python" or "text"
    # What its written fixes promise by default (a check may say less for one finding).
    applicability: Applicability = Applicability.SAFE
    what: str = ""
    why: str = ""
    use_instead: str = ""
    fix_safety: str = ""
    details: str = ""  # the long form of the sections above (collapsed in docs/rules.md)
    example_before: str = ""
    example_after: str = ""
    symbols: tuple[str, ...] = ()
    replacement: str = ""
    # What the fix planner needs to know of the rule (see ROLES), the torch release whose
    # import or call of its symbols warns, and whether its findings differ with the intent.
    roles: tuple[str, ...] = ()
    warns_in: str | None = None
    intent_sensitive: bool = False
    extra: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    @property
    def fix_label(self) -> str:
        """`auto (safe)`, `auto (unsafe)`, `assisted`, `manual`."""
        if self.fix is FixKind.AUTO:
            return f"auto ({self.applicability.value})"
        return self.fix.value

    def matches_symbol(self, qualname: str) -> bool:
        return any(
            fnmatch.fnmatchcase(qualname, s) if "*" in s else qualname == s for s in self.symbols
        )


_REQUIRED = ("code", "name", "title", "fix", "target")

# The roles a rule's data may declare (`roles:` in rules/MIGnnn.yaml), which the planner and
# the test gate ask for instead of naming codes.
ROLES = {
    "capture": "a torch.jit.script/trace call whose fix captures with torch.export",
    "script": "a capture that scripts (torch.jit.script)",
    "trace": "a capture that traces (torch.jit.trace, trace_module)",
    "producer": "writes a TorchScript archive (a file other code may load)",
    "consumer": "loads a TorchScript archive",
    "lite-save": "writes a lite-interpreter archive",
    "mobile": "optimize_for_mobile",
    "typing": "tells the scripting compiler how to type or skip code (gone once nothing scripts it)",
    "guard": "is_scripting()/is_tracing(): a question TorchScript answers",
    "interface": "@torch.jit.interface",
    "tracer-filter": "a warnings filter for TracerWarning",
    "executor-switch": "a TorchScript executor or fuser setting",
    "wrapper-call": "a call of the repository's own TorchScript wrapper",
    "data-branch": "a branch on tensor data in a captured forward",
    "cross-file": "its fix's safety depends on other files (the planner needs repository facts)",
    "archive-writer": "writes an archive to a path its call names (a native loader's writer)",
    "framework-producer": "a framework's own TorchScript export (Lightning's to_torchscript)",
    "aoti-loader": "a C++ runtime use whose fix moves to AOTInductor's package loader",
    "native-runtime": "serving code outside Python on the TorchScript runtime (C++, Android, iOS)",
    "inference-pass": "torch.jit.freeze / optimize_for_inference: a pass over a TorchScript module",
    "native-source": "a use of the TorchScript runtime in source a CMake project compiles",
    "cmake-runtime": "a CMake project that links libtorch for TorchScript",
}


def rule_files() -> dict[str, dict]:
    """{path: parsed YAML} of rules/MIG*.yaml. Every CLI start reads them all: the parse is
    kept in the cache folder under a hash of the files' names and bytes, so most starts read
    one JSON file and never import PyYAML (a tenth of a one-file pre-commit run)."""
    paths = sorted(rules_dir().glob("MIG*.yaml"))
    texts = [p.read_bytes() for p in paths]
    key = hashlib.blake2b(digest_size=16)
    for path, text in zip(paths, texts, strict=True):
        key.update(path.name.encode() + b"\0" + text + b"\0")
    kept = cache_home() / f"rules-{key.hexdigest()}.json"
    try:
        cached = json.loads(kept.read_text(encoding="utf-8"))
        return {str(p): cached[p.name] for p in paths}
    except (OSError, ValueError, KeyError):
        pass
    import yaml

    # libyaml's loader reads the rule files ten times faster than the pure-Python one.
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    parsed = {
        p.name: yaml.load(t.decode("utf-8"), Loader=loader) or {}
        for p, t in zip(paths, texts, strict=True)
    }
    try:
        text = json.dumps(parsed)
    except (TypeError, ValueError):  # a YAML date or set: no JSON for it
        return {str(p): parsed[p.name] for p in paths}
    if json.loads(text) == parsed:  # only data JSON gives back unchanged
        _write_quietly(kept, text)
    return {str(p): parsed[p.name] for p in paths}


def _write_quietly(path: Path, text: str) -> None:
    """Atomically, or not at all: a read-only home only costs the next start a parse."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".rules-", suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except OSError:
        pass


def _load_rule(path: Path, data: dict) -> Rule:
    missing = [k for k in _REQUIRED if k not in data]
    if missing:
        raise ValueError(f"{path}: missing keys {', '.join(missing)}")
    if data["code"] != path.stem:
        raise ValueError(f"{path}: code {data['code']} does not match the file name")
    example = data.get("example") or {}
    known = set(_REQUIRED) | {
        "what",
        "why",
        "use_instead",
        "fix_safety",
        "details",
        "example",
        "symbols",
        "replacement",
        "applicability",
        "roles",
        "warns_in",
        "intent_sensitive",
    }
    roles = tuple(data.get("roles") or ())
    unknown = [r for r in roles if r not in ROLES]
    if unknown:
        raise ValueError(f"{path}: unknown roles {', '.join(unknown)} (see registry.ROLES)")
    return Rule(
        code=data["code"],
        name=data["name"],
        title=data["title"],
        fix=FixKind(data["fix"]),
        target=data["target"],
        applicability=Applicability(data.get("applicability", "safe")),
        what=(data.get("what") or "").strip(),
        why=(data.get("why") or "").strip(),
        use_instead=(data.get("use_instead") or "").strip(),
        fix_safety=(data.get("fix_safety") or "").strip(),
        details=(data.get("details") or "").strip(),
        example_before=(example.get("before") or "").rstrip("\n"),
        example_after=(example.get("after") or "").rstrip("\n"),
        symbols=tuple(data.get("symbols") or ()),
        replacement=(data.get("replacement") or "").strip(),
        roles=roles,
        warns_in=str(data["warns_in"]) if data.get("warns_in") else None,
        intent_sensitive=bool(data.get("intent_sensitive")),
        extra={k: v for k, v in data.items() if k not in known},
    )


@functools.lru_cache(maxsize=1)
def all_rules() -> dict[str, Rule]:
    rules = {}
    for path, data in rule_files().items():
        rule = _load_rule(Path(path), data)
        rules[rule.code] = rule
    return rules


@functools.cache
def codes_with(role: str) -> tuple[str, ...]:
    """The codes whose rule data declare `role`, in code order."""
    if role not in ROLES:
        raise KeyError(f"unknown rule role {role!r}")
    return tuple(sorted(code for code, rule in all_rules().items() if role in rule.roles))


@functools.cache
def code_with(role: str) -> str:
    """The one code whose rule data declare `role` (a role only one rule may hold)."""
    codes = codes_with(role)
    if len(codes) != 1:
        raise LookupError(f"role {role!r} is declared by {len(codes)} rules, not one: {codes}")
    return codes[0]


@functools.cache
def code_for(role: str, symbol: str) -> str:
    """The code of the rule declaring `role` whose symbols name `symbol` (the capture rule of
    `torch.jit.trace`, the producer of `torch.jit.save`)."""
    codes = [c for c in codes_with(role) if all_rules()[c].matches_symbol(symbol)]
    if len(codes) != 1:
        raise LookupError(f"{len(codes)} rules with role {role!r} name {symbol}, not one: {codes}")
    return codes[0]


def rule_holding(key: str) -> Rule | None:
    """The one rule whose data hold the table `key` (`minimum_versions`), or None."""
    rules = [rule for rule in all_rules().values() if key in rule.extra]
    if len(rules) > 1:
        raise LookupError(f"{len(rules)} rules hold {key!r}: {[r.code for r in rules]}")
    return rules[0] if rules else None


@functools.cache
def warning_codes() -> frozenset[str]:
    """Codes whose symbols warn when imported or called in the pinned torch."""
    return frozenset(code for code, rule in all_rules().items() if rule.warns_in)


@functools.cache
def intent_sensitive_codes() -> tuple[str, ...]:
    return tuple(sorted(code for code, rule in all_rules().items() if rule.intent_sensitive))


def select_codes(select: list[str] | None, ignore: list[str] | None) -> list[str]:
    """Codes enabled by --select/--ignore; prefixes work like ruff's (MIG1, MIG30)."""
    codes = sorted(all_rules())
    if select:
        codes = [c for c in codes if any(c.startswith(s.upper()) for s in select)]
    if ignore:
        codes = [c for c in codes if not any(c.startswith(s.upper()) for s in ignore)]
    return codes


def unknown_codes(patterns: list[str]) -> list[str]:
    codes = all_rules()
    return [p for p in patterns if not any(c.startswith(p.upper()) for c in codes)]
