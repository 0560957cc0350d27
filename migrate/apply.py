"""migrate apply: scan, fix each file in memory, then show the diff or write atomically."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from migrate.engine import Scanner, ScanOptions
from migrate.findings import FileError, Finding, ScanResult
from migrate.fixer import FileFix, decode, dirty_files, encode, fix_source, fixable, write_atomic


@dataclass
class ApplyResult:
    scan: ScanResult
    fixes: list[FileFix] = field(default_factory=list)
    errors: list[FileError] = field(default_factory=list)
    skipped_dirty: list[str] = field(default_factory=list)
    written: list[str] = field(default_factory=list)

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
    progress: Callable[[int], None] | None = None,
) -> ApplyResult:
    scanner = Scanner(options, progress)
    scan = scanner.scan(paths)
    result = ApplyResult(scan, errors=list(scan.errors))
    by_path: dict[str, list[Finding]] = {}
    for f in scan.findings:
        by_path.setdefault(f.path, []).append(f)
    todo = [p for p, fs in by_path.items() if any(fixable(f) for f in fs)]
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
        )
        result.fixes.append(fix)
        if fix.error:
            result.errors.append(FileError(display, fix.error))
            continue
        if fix.changed and not dry_run:
            write_atomic(path, encode(decoded, fix.fixed))
            result.written.append(display)
    return result
