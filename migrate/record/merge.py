"""Merging evidence: the part files of one run's processes, and that run with the file."""

from __future__ import annotations

import json
import time
from pathlib import Path

from migrate.record import SCHEMA_VERSION
from migrate.record.boot._migrate_recorder import MAX_SHAPES
from migrate.safe_read import Skipped, read_checked
from migrate.safe_write import make_folder, write_atomic


class EvidenceError(ValueError):
    """An evidence file that cannot be read as one."""


def site_key(site: dict) -> tuple[str, int, str]:
    return site["path"], site["line"], site["api"]


def _merge_counted(mine: list[dict], theirs: list[dict], limit: int = 8) -> None:
    index = {json.dumps(e["value"], sort_keys=True): e for e in mine}
    for entry in theirs:
        key = json.dumps(entry["value"], sort_keys=True)
        if key in index:
            index[key]["count"] += entry["count"]
        elif len(mine) < limit:
            mine.append(dict(entry))
            index[key] = mine[-1]


def call_key(call: dict) -> str:
    from migrate.record.boot._migrate_recorder import skeleton

    whole = {
        "t": "tuple",
        "items": [{"t": "tuple", "items": call["args"]}, {"t": "dict", "items": call["kwargs"]}],
    }
    return skeleton(whole)


def merge_calls(mine: list[dict], theirs: list[dict]) -> None:
    index = {call_key(c): c for c in mine}
    for call in theirs:
        key = call_key(call)
        if key not in index:
            mine.append(json.loads(json.dumps(call)))
            index[key] = mine[-1]
            continue
        into = index[key]
        into["count"] += call["count"]
        shapes = into.setdefault("shapes", [])
        for joint in call.get("shapes", ()):
            if joint not in shapes and len(shapes) < MAX_SHAPES:
                shapes.append(joint)
        for axes, other in zip(into["axes"], call["axes"], strict=False):
            for sizes, seen in zip(axes, other, strict=False):
                sizes.extend(s for s in seen if s not in sizes)
                sizes.sort()


def merge_sites(base: list[dict], new: list[dict]) -> list[dict]:
    """`new` added to `base`: a site recorded again with another digest (its lines changed
    since) replaces the old record; one with the same digest adds up."""
    merged = {site_key(s): json.loads(json.dumps(s)) for s in base}
    for site in new:
        key = site_key(site)
        old = merged.get(key)
        if old is None or old["digest"] != site["digest"]:
            merged[key] = json.loads(json.dumps(site))
            for call in merged[key]["calls"]:
                for axes in call["axes"]:
                    for sizes in axes:
                        sizes.sort()
            continue
        old["count"] += site["count"]
        old["end_line"] = site["end_line"]
        _merge_counted(old["captured"], site["captured"])
        _merge_counted(old["examples"], site["examples"])
        merge_calls(old["calls"], site["calls"])
        for field in ("saved", "loaded", "saves_of"):
            old[field].extend(p for p in site[field] if p not in old[field])
    return sorted(merged.values(), key=site_key)


def read_evidence(path: Path) -> dict:
    """The evidence file's data, checked against its schema (migrate/record/schema.py)
    before anything reads it; EvidenceError naming the file and the cause."""
    from migrate.record.schema import Invalid, validate

    try:
        # The scan's checked read: a FIFO or a link to /dev/zero named evidence.json
        # in a scanned tree must not hang the scan or fill memory.
        data = json.loads(read_checked(path).decode("utf-8"))
    except Skipped as exc:
        raise EvidenceError(f"{path}: {exc}") from None
    except OSError as exc:
        raise EvidenceError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except RecursionError:
        raise EvidenceError(f"{path}: not an evidence file (nested too deeply)") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise EvidenceError(f"{path}: not an evidence file (invalid JSON: {exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("sites"), list):
        raise EvidenceError(f"{path}: not an evidence file (no `sites` list)")
    if data.get("version") != SCHEMA_VERSION:
        raise EvidenceError(
            f"{path}: evidence version {data.get('version')!r}, this tool reads {SCHEMA_VERSION}"
        )
    try:
        validate(data)
    except Invalid as exc:
        raise EvidenceError(f"{path}: not a valid evidence file: {exc}") from None
    return data


def read_parts(folder: Path) -> tuple[list[dict], int]:
    """Every process's sites merged, and how many processes wrote a part."""
    sites: list[dict] = []
    count = 0
    for part in sorted(folder.glob("part-*.json")):
        try:
            data = json.loads(part.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue  # a process killed while writing leaves no usable part
        sites = merge_sites(sites, data.get("sites", []))
        count += 1
    return sites, count


def write_evidence(path: Path, data: dict, root: Path | None = None) -> None:
    """The evidence file written atomically, never through a symlink; with `root` (the
    folder it belongs in) no folder is created outside it."""
    make_folder(path.parent, root if root is not None else path.parent)
    text = json.dumps(data, indent=1, sort_keys=True) + "\n"
    write_atomic(path, text.encode("utf-8"), root)


def merge_run(evidence: Path, parts: Path, exit_code: int, root: Path | None = None) -> dict:
    """The evidence file with this run's parts added (see write_evidence)."""
    base: dict = {"version": SCHEMA_VERSION, "tool": "torchscript-migrate", "runs": [], "sites": []}
    if evidence.exists():
        base = read_evidence(evidence)
    sites, processes = read_parts(parts)
    base["sites"] = merge_sites(base["sites"], sites)
    base.setdefault("runs", []).append(
        {
            "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "exit_code": exit_code,
            "processes": processes,
            "sites": len(sites),
        }
    )
    write_evidence(evidence, base, root)
    return base
