"""migrate apply: scan, fix each file in memory, then show the diff or write atomically."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from migrate.engine import Scanner, ScanOptions
from migrate.findings import FileError, Finding, ScanResult
from migrate.fixer import (
    WITH_UNSAFE,
    WRITABLE,
    FileFix,
    Held,
    decode,
    dirty_files,
    encode,
    fix_source,
    fix_units,
    write_atomic,
)
from migrate.fixplan import finding_key, plan_fixes


@dataclass
class ApplyResult:
    scan: ScanResult
    fixes: list[FileFix] = field(default_factory=list)
    errors: list[FileError] = field(default_factory=list)
    skipped_dirty: list[str] = field(default_factory=list)
    written: list[str] = field(default_factory=list)
    # Fixes not written and why (unsafe without --unsafe-fixes, a group member missing...).
    held: list[Held] = field(default_factory=list)

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
        left += [f for f in self.scan.findings if f.path not in fixed_paths]
        return sorted(left, key=lambda f: (f.path, f.line, f.column, f.rule))


def copy_tree(sources: Iterable[str | Path], out_dir: Path) -> list[Path]:
    """--out: copy each given path under out_dir and return the new paths to work on."""
    out_dir.mkdir(parents=True, exist_ok=True)
    targets = []
    for src in map(Path, sources):
        dest = out_dir / src.resolve().name
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
) -> ApplyResult:
    scanner = Scanner(options, progress)
    scan = scanner.scan(paths)
    allowed = WITH_UNSAFE if unsafe_fixes else WRITABLE
    # The scan planned for every fix; this run writes fewer (no unsafe ones, say), which
    # can hold more back: a loader whose writer stays TorchScript stays too.
    plan = plan_fixes(scan.findings, allowed, scanner.codes, scanner.facts())
    scan.findings = plan.findings
    result = ApplyResult(scan, errors=list(scan.errors))
    units, held = fix_units(plan.findings, allowed)
    result.held = held
    held_keys = {finding_key(h.finding) for h in held} | set(plan.held)
    by_path: dict[str, list[Finding]] = {}
    for f in plan.findings:
        by_path.setdefault(f.path, []).append(f)
    todo = sorted({f.path for u in units for f in u.findings})
    if not dry_run and not allow_dirty and todo:
        dirty = dirty_files(Path(scanner.jobs[p].path) for p in todo)
        dirty_names = {scanner.jobs[p].display for p in todo if Path(scanner.jobs[p].path) in dirty}
        for p in sorted(dirty_names):
            result.errors.append(
                FileError(
                    p, "has uncommitted changes; not touched (commit first or pass --allow-dirty)"
                )
            )
        result.skipped_dirty = sorted(dirty_names)
        todo = [p for p in todo if p not in dirty_names]
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
            write_atomic(path, encode(decoded, fix.fixed))
            result.written.append(display)
    return result


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
