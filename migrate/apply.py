"""migrate apply: scan, fix each file in memory, then show the diff or write atomically."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from migrate.engine import Scanner, ScanOptions
from migrate.findings import FileError, Finding, ScanResult
from migrate.fixer import (
    WITH_UNSAFE,
    WRITABLE,
    Decoded,
    FileFix,
    Held,
    apply_units,
    decode,
    dirty_files,
    encode,
    fix_source,
    fix_units,
    take_units,
    write_atomic,
)
from migrate.fixplan import attach_unlocks, finding_key, plan_fixes


@dataclass
class ApplyResult:
    scan: ScanResult
    fixes: list[FileFix] = field(default_factory=list)
    errors: list[FileError] = field(default_factory=list)
    skipped_dirty: list[str] = field(default_factory=list)
    written: list[str] = field(default_factory=list)
    # Fixes not written and why (unsafe without --unsafe-fixes, a group member missing...).
    held: list[Held] = field(default_factory=list)
    # Files left alone on purpose (a symlink), with the reason; not errors.
    notes: list[FileError] = field(default_factory=list)
    # Symlinks whose target is rewritten through its own path: their findings are not left.
    links_to_scanned: set[str] = field(default_factory=set)
    # --test: what the project's tests kept and reverted (migrate.testgate.GateReport).
    test_report: Any = None

    @property
    def changed(self) -> list[FileFix]:
        return [f for f in self.fixes if f.changed]

    @property
    def applied(self) -> list[Finding]:
        return [a for f in self.changed for a in f.applied]

    @property
    def remaining(self) -> list[Finding]:
        fixed_paths = {f.path for f in self.fixes if f.error is None}
        left = [r for f in self.fixes if f.error is None for r in f.remaining]
        left += [
            f
            for f in self.scan.findings
            if f.path not in fixed_paths and f.path not in self.links_to_scanned
        ]
        return sorted(left, key=lambda f: (f.path, f.line, f.column, f.rule))


def out_targets(sources: Iterable[str | Path], out_dir: Path) -> list[tuple[Path, Path]]:
    """--out: (source, copy) pairs, or ValueError when the copy would land in a scanned
    folder (it would copy itself forever) or two sources share a name."""
    if out_dir.exists() and not out_dir.is_dir():
        raise ValueError(f"--out {out_dir}: is a file, not a folder")
    out_real = Path(os.path.realpath(out_dir))
    pairs: list[tuple[Path, Path]] = []
    taken: dict[Path, Path] = {}
    for src in map(Path, sources):
        real = Path(os.path.realpath(src))
        if os.path.isdir(src) and (out_real == real or real in out_real.parents):
            raise ValueError(
                f"--out {out_dir}: inside the folder being migrated ({src}); "
                "choose a folder outside it"
            )
        dest = out_dir / real.name
        if dest in taken:
            raise ValueError(
                f"--out {out_dir}: {taken[dest]} and {src} would both be copied to {dest}; "
                "migrate them one at a time or name their common folder"
            )
        taken[dest] = src
        pairs.append((src, dest))
    return pairs


def copy_tree(sources: Iterable[str | Path], out_dir: Path) -> list[Path]:
    """--out: copy each given path under out_dir and return the new paths to work on."""
    pairs = out_targets(sources, out_dir)
    targets: list[Path] = []
    for src, dest in pairs:
        if not os.path.exists(src):
            # Missing, or a symlink loop: the scan reports it as one line; copy the rest.
            targets.append(src)
            continue
        out_dir.mkdir(parents=True, exist_ok=True)
        if src.is_dir():
            shutil.copytree(
                src, dest, symlinks=True, dirs_exist_ok=True, ignore=shutil.ignore_patterns(".git")
            )
        else:
            shutil.copy2(src, dest)
        targets.append(dest)
    return targets


def run_apply(
    paths: list[str],
    options: ScanOptions,
    *,
    dry_run: bool = False,
    allow_dirty: bool = False,
    unsafe_fixes: bool = False,
    progress: Callable[[int], None] | None = None,
    test_gate: Callable[[list, dict], Any] | None = None,
) -> ApplyResult:
    """`test_gate` (apply --test) gets the fix units and the files they touch and returns
    a report whose `kept` units alone are written, in one pass (migrate.testgate)."""
    scanner = Scanner(options, progress)
    scan = scanner.scan(paths)
    allowed = WITH_UNSAFE if unsafe_fixes else WRITABLE
    attach_unlocks(scanner, scan)
    # The scan planned for every fix; this run writes fewer (no unsafe ones, say), which
    # can hold more back: a loader whose writer stays TorchScript stays too.
    plan = plan_fixes(scan.findings, allowed, scanner.codes, scanner.facts(), intent=options.intent)
    scan.findings = plan.findings
    result = ApplyResult(scan, errors=list(scan.errors))
    units, held = fix_units(plan.findings, allowed)
    result.held = held
    held_keys = {finding_key(h.finding) for h in held} | set(plan.held)
    by_path: dict[str, list[Finding]] = {}
    for f in plan.findings:
        by_path.setdefault(f.path, []).append(f)
    todo = sorted({f.path for u in units for f in u.findings})
    todo = _leave_symlinks(todo, scanner, result)
    if not dry_run and not allow_dirty and todo:
        dirty = dirty_files(Path(scanner.jobs[p].path) for p in todo)
        dirty_names = {}
        for p in todo:
            status = dirty.get(Path(scanner.jobs[p].path))
            if status is not None:
                dirty_names[scanner.jobs[p].display] = status
        for p, status in sorted(dirty_names.items()):
            reason = DIRTY_REASONS.get(status, "has uncommitted changes")
            result.errors.append(
                FileError(p, f"{reason}; not touched (commit first or pass --allow-dirty)")
            )
        result.skipped_dirty = sorted(dirty_names)
        todo = [p for p in todo if p not in dirty_names]
    if test_gate is not None:
        _apply_gated(result, scanner, todo, units, by_path, test_gate, dry_run)
        return result
    for display in todo:
        job = scanner.jobs[display]
        path = Path(job.path)
        try:
            raw = path.read_bytes()
            decoded = decode(raw)
        except (OSError, UnicodeDecodeError, SyntaxError) as exc:
            result.errors.append(FileError(display, f"cannot read: {exc}"))
            continue
        fix = fix_source(
            display,
            decoded.text,
            lambda text, d=display: scanner.analyze(d, text),
            decoded.newline,
            allowed=allowed,
            findings=by_path[display],
            replan=_keep_held(by_path[display], held_keys),
        )
        result.fixes.append(fix)
        if fix.error:
            result.errors.append(FileError(display, fix.error))
            continue
        if fix.changed and not dry_run:
            _write(result, display, path, decoded, fix)
    return result


def _write(result: ApplyResult, display: str, path: Path, decoded: Decoded, fix: FileFix) -> None:
    try:
        write_atomic(path, encode(decoded, fix.fixed))
    except OSError as exc:
        # One unwritable folder must not stop the files after it.
        fix.error = f"cannot write: {_os_reason(exc)}"
        result.errors.append(FileError(display, fix.error))
        return
    result.written.append(display)


def _apply_gated(
    result: ApplyResult,
    scanner: Scanner,
    todo: list[str],
    units: list,
    by_path: dict[str, list[Finding]],
    test_gate: Callable[[list, dict], Any],
    dry_run: bool,
) -> None:
    """apply --test: one round of fixes per file, only the units the tests keep, written
    once after every test run (Ctrl-C before then leaves the tree as it was)."""
    sources: dict[str, tuple[Path, Decoded]] = {}
    gated: list = []
    for display in todo:
        path = Path(scanner.jobs[display].path)
        try:
            decoded = decode(path.read_bytes())
        except (OSError, UnicodeDecodeError, SyntaxError) as exc:
            result.errors.append(FileError(display, f"cannot read: {exc}"))
            continue
        mine = [u for u in units if {f.path for f in u.findings} == {display}]
        # Units whose edits overlap an earlier one wait for a later run, as in fix_source.
        taken = {id(f) for f in take_units(mine)[0]}
        mine = [u for u in mine if all(id(f) in taken for f in u.findings)]
        try:
            apply_units(display, decoded.text, mine, decoded.newline)
        except ValueError as exc:
            result.errors.append(FileError(display, f"{exc}; left untouched"))
            continue
        sources[display] = (path, decoded)
        gated.extend(mine)
    report = test_gate(gated, sources)
    result.test_report = report
    kept = {id(gated[i]) for i in report.kept}
    for r in report.reverted:
        tests = ", ".join(sorted(r.tests))
        result.held.extend(Held(f, f"reverted: it broke {tests}") for f in gated[r.unit].findings)
    for display, (path, decoded) in sources.items():
        mine = [u for u in gated if id(u) in kept and u.findings[0].path == display]
        applied = [f for u in mine for f in u.findings]
        fixed = apply_units(display, decoded.text, mine, decoded.newline)
        done = {id(f) for f in applied}
        remaining = [f for f in by_path[display] if id(f) not in done]
        fix = FileFix(display, decoded.text, fixed, applied, remaining)
        result.fixes.append(fix)
        if fix.changed and not dry_run:
            _write(result, display, path, decoded, fix)


def _keep_held(original: list[Finding], held: set) -> Callable[[list[Finding]], list[Finding]]:
    """Later fix rounds re-analyse the file: a fix held back in the first round stays held.

    Positions move as edits land, so a held finding is recognised by its rule, symbol and
    the text of its first line, which its own (unwritten) fix never changed.
    """
    from migrate.fixplan import demote

    signatures = {
        (f.rule, f.symbol, f.message.split(";")[0]): f
        for f in original
        if finding_key(f) in held or f.autofix is None and f.fix.value == "assisted"
    }

    def replan(findings: list[Finding]) -> list[Finding]:
        out = []
        for f in findings:
            before = signatures.get((f.rule, f.symbol, f.message.split(";")[0]))
            if f.autofix is not None and before is not None:
                f = demote(f, "held back in the first round")
            out.append(f)
        return out

    return replan


# git status codes of files apply will not overwrite without --allow-dirty.
DIRTY_REASONS = {
    "??": "is not tracked by git",
    "!!": "is ignored by git",
    "?": "git could not say whether it has uncommitted changes",
}


def _os_reason(exc: OSError) -> str:
    return exc.strerror.lower() if exc.strerror else str(exc)


def _leave_symlinks(todo: list[str], scanner: Scanner, result: ApplyResult) -> list[str]:
    """Symlinks are never replaced by files: a link to a scanned file is fixed through that
    file (once); any other link is left with a note."""
    scanned = {
        os.path.realpath(job.path) for job in scanner.jobs.values() if not os.path.islink(job.path)
    }
    kept = []
    for display in todo:
        path = scanner.jobs[display].path
        if not os.path.islink(path):
            kept.append(display)
        elif os.path.realpath(path) in scanned:
            result.links_to_scanned.add(display)
        else:
            result.notes.append(
                FileError(
                    display,
                    f"is a symlink to {os.readlink(path)}, which is not among the files being "
                    "migrated; not touched (migrate the target instead)",
                )
            )
    return kept
