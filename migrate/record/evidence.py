"""The evidence a scan reads: `.migrate/evidence.json`, indexed by file and line.

Activated once per scanning process (migrate.scan.workers' worker start) from the scan options;
the checks ask `active()` for the site at a call. A site counts only while its lines are
those the run recorded (the digest of their text): otherwise it is stale and ignored, with a
note the finding carries.
"""

from __future__ import annotations

import ast
import hashlib
from dataclasses import dataclass
from pathlib import Path

from migrate.record.boot._migrate_recorder import line_digest
from migrate.record.merge import read_evidence
from migrate.safe_read import Skipped, read_checked

_ACTIVE: dict[str, Evidence | None] = {"evidence": None}


@dataclass
class Match:
    site: dict | None  # the recorded site whose lines still match
    note: str | None = None  # why a recorded site was not used (stale)


class Evidence:
    def __init__(self, data: dict, source: str) -> None:
        self.source = source
        self.by_file: dict[str, list[dict]] = {}
        self.by_key: dict[str, dict] = {}
        for site in data["sites"]:
            self.by_file.setdefault(site["path"], []).append(site)
            self.by_key[f"{site['path']}:{site['line']}:{site['api']}"] = site

    def _sites_of(self, display: str) -> list[dict]:
        found = self.by_file.get(display)
        if found is not None:
            return found
        for path, sites in self.by_file.items():
            if path.endswith("/" + display) or display.endswith("/" + path):
                return sites
        return []

    def at(self, ctx, node: ast.AST, apis: frozenset[str] | set[str]) -> Match:
        """The recorded site of `apis` at the call `node` in ctx's file."""
        line = node.lineno  # type: ignore[attr-defined]
        end = getattr(node, "end_lineno", None) or line
        sites = [s for s in self._sites_of(ctx.path) if s["line"] == line and s["api"] in apis]
        if not sites:
            return Match(None)
        text = "\n".join(ctx.index.line_text(n) for n in range(line, end + 1))
        digest = line_digest(text)
        fresh = [s for s in sites if s["digest"] == digest and s["end_line"] == end]
        if fresh:
            return Match(fresh[0])
        return Match(
            None,
            f"recorded evidence for line {line} is stale (the line changed since the "
            "recorded run): ignored",
        )

    def loads_of_saves(self, capture: dict) -> list[dict]:
        """Load sites that read a file a save of this capture's result wrote."""
        key = f"{capture['path']}:{capture['line']}:{capture['api']}"
        written = {
            path
            for site in self.by_key.values()
            if key in site.get("saves_of", ())
            for path in site["saved"]
        }
        return [
            s
            for s in self.by_key.values()
            if s["api"] in ("torch.jit.load", "_load_for_lite_interpreter")
            and written & set(s["loaded"])
        ]

    def writers_of(self, paths: list[str]) -> list[dict]:
        return [s for s in self.by_key.values() if set(s["saved"]) & set(paths)]


def fingerprint(path: str | None) -> str | None:
    """What the scan cache keys on: the evidence file's bytes."""
    if not path:
        return None
    try:
        return hashlib.blake2b(read_checked(path), digest_size=8).hexdigest()
    except (OSError, Skipped):
        return None


def activate(path: str | None) -> None:
    """Read the evidence for this process's scans (None: no evidence)."""
    if not path:
        _ACTIVE["evidence"] = None
        return
    source = f"{path}@{fingerprint(path)}"  # read again once the file changed
    current = _ACTIVE["evidence"]
    if current is not None and current.source == source:
        return
    _ACTIVE["evidence"] = Evidence(read_evidence(Path(path)), source)


def active() -> Evidence | None:
    return _ACTIVE["evidence"]
