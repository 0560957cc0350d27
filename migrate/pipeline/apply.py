"""migrate apply: scan, fix each file in memory, then show the diff or write atomically."""

from __future__ import annotations

import dataclasses
import functools
import os
import shutil
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from migrate.findings import FileError, Finding, ScanResult
from migrate.fix.edits import take_units
from migrate.fix.fixer import FileFix, apply_units
from migrate.fix.source_text import Decoded, decode, encode, relocate
from migrate.fix.tidy import configured_line_length, fix_source
from migrate.fix.write_safety import dirty_files, stale_temp_files
from migrate.pipeline.scan import PlannedScanner
from migrate.plan.fixplan import attach_unlocks, finding_key, held_with_reverted, plan_fixes
from migrate.plan.units import WITH_UNSAFE, WRITABLE, Held, fix_units
from migrate.registry import code_with
from migrate.safe_write import UnsafeOutput, write_atomic
from migrate.scan.cache import default_cache_folder, digest
from migrate.scan.discover import Skipped, UsageError, read_checked
from migrate.scan.engine import Scanner, ScanOptions
from migrate.scan.workers import rare_collections


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
    # --test: what the project's tests kept and reverted (migrate.fix.gate_report.GateReport).
    test_report: Any = None
    # Folders written in that no git work tree holds: nothing keeps the files' old text.
    unprotected: list[str] = field(default_factory=list)

    @property
    def changed(self) -> list[FileFix]:
        return [f for f in self.fixes if f.changed]

    @property
    def applied(self) -> list[Finding]:
        return [a for f in self.changed for a in f.applied]

    @property
    def remaining(self) -> list[Finding]:
        fixed_paths = {f.path for f in self.fixes if f.error is None}
        # A call of a wrapper that moved in this run, found again in a later round of its
        # file (analysed against the wrapper as it was), is not left either.
        wrapper_calls = code_with("wrapper-call")
        moved = {a.get("wrapper") for a in self.applied if a.rule == wrapper_calls}
        left = [
            r
            for f in self.fixes
            if f.error is None
            for r in f.remaining
            if not (
                r.rule == wrapper_calls and r.get("role") != "wrapper" and r.get("wrapper") in moved
            )
        ]
        # A wrapper call fixed with its wrapper (in the wrapper's file) is not left in its own.
        done = {(a.path, a.key) for a in self.applied}
        left += [
            f
            for f in self.scan.findings
            if f.path not in fixed_paths
            and f.path not in self.links_to_scanned
            and (f.path, f.key) not in done
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
    test_gate: Callable[..., Any] | None = None,
) -> ApplyResult:
    """`test_gate` (apply --test) gets the fix units and the files they touch and returns
    a report whose `kept` units alone are written, in one pass (migrate.fix.testgate), and
    `replan`: after a revert, the units the planner now holds with it (held_with_reverted).

    A run that writes holds the lock of each tree it works in (ApplyLocked when another
    run holds one); a dry run takes none."""
    run = functools.partial(
        _run_apply,
        paths,
        options,
        dry_run=dry_run,
        allow_dirty=allow_dirty,
        unsafe_fixes=unsafe_fixes,
        progress=progress,
        test_gate=test_gate,
    )
    # The scan's trees stay alive while the fixes are written: the collector would walk them
    # again and again as the fixer and tidy allocate, so its rare collections hold throughout.
    with rare_collections():
        if dry_run:
            return run()
        with tree_locks(paths):
            return run()


def _run_apply(
    paths: list[str],
    options: ScanOptions,
    *,
    dry_run: bool,
    allow_dirty: bool,
    unsafe_fixes: bool,
    progress: Callable[[int], None] | None,
    test_gate: Callable[..., Any] | None,
) -> ApplyResult:
    started = time.time()
    scanner = PlannedScanner(options, progress)
    scan = scanner.scan(paths)
    trees = _Trees(scanner)
    # One file named twice (`a.py ./../repo/a.py`) is planned, fixed and written once.
    aliases = trees.aliases(f.path for f in scan.findings)
    scan.findings = [f for f in scan.findings if f.path not in aliases]
    allowed = WITH_UNSAFE if unsafe_fixes else WRITABLE
    attach_unlocks(scanner, scan)
    # The scan planned for every fix; this run writes fewer (no unsafe ones, say), which
    # can hold more back: a loader whose writer stays TorchScript stays too.
    facts = scanner.facts()
    plan = plan_fixes(scan.findings, allowed, scanner.codes, facts, intent=options.intent)
    # apply --test: after a revert, the same plan again with the reverted units held.
    replan = functools.partial(
        held_with_reverted, scan.findings, allowed, scanner.codes, facts, options.intent
    )
    scan.findings = plan.findings
    result = ApplyResult(scan, errors=list(scan.errors))
    result.links_to_scanned |= aliases
    if not dry_run:
        _remove_stale_temps(trees, started, result)
    units, held = fix_units(plan.findings, allowed)
    result.held = held
    # A lone fix held only because this run may not write its kind (unsafe) is not held
    # again in later rounds: the fixer leaves it unwritten and says that one reason.
    held_reasons = {
        finding_key(h.finding): h.reason
        for h in held
        if h.finding.autofix is None
        or h.finding.autofix.group is not None
        or h.finding.autofix.applicability in allowed
    } | plan.held
    by_path: dict[str, list[Finding]] = {}
    for f in plan.findings:
        by_path.setdefault(f.path, []).append(f)
    # The files of units spanning files first: a wrapper call's edits (in another file) are
    # written only after its unit's own file was fixed (_own_rider_fixes).
    spanning = sorted({u.path for u in units if len(u.paths) > 1})
    todo = spanning + sorted({p for u in units for p in u.paths} - set(spanning))
    todo = _leave_symlinks(todo, scanner, result)
    todo = [d for d in todo if not _refused_outside(trees, d, result)]
    # The line length each file is wrapped to, read before any file is written: a malformed
    # linter setting stops the run here (ConfigError), not halfway through the tree.
    for display in todo:
        configured_line_length(scanner.jobs[display].path)
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
        _apply_gated(result, scanner, trees, todo, units, by_path, test_gate, dry_run, replan)
        result.unprotected = unprotected_folders(trees.root(d) for d in result.written)
        return result
    riders = _riders_with_edits(units)
    for display in todo:
        by_path[display] = _own_rider_fixes(by_path.get(display, []), riders, result)
        job = scanner.jobs[display]
        path = Path(job.path)
        read = _read(result, scanner, display, path)
        if read is None:
            continue
        raw, decoded = read
        fix = fix_source(
            display,
            decoded.text,
            lambda text, d=display: scanner.analyze(d, text),
            decoded.newline,
            allowed=allowed,
            findings=by_path[display],
            replan=_keep_held(by_path[display], held_reasons),
        )
        fix.source_digest = digest(raw)
        if dry_run:
            # Nothing is written: what is left is shown where it is in the file on disk.
            fix.remaining = relocate(fix.remaining, fix.fixed, fix.original)
        result.fixes.append(fix)
        if fix.error:
            result.errors.append(FileError(display, fix.error))
            continue
        if fix.changed and not dry_run:
            _write(result, trees, display, path, decoded, fix)
    _count_riders(result, units)
    result.unprotected = unprotected_folders(trees.root(d) for d in result.written)
    return result


def unprotected_folders(folders: Iterable[str]) -> list[str]:
    """Those of `folders` outside every git work tree (a work tree owned by another user,
    which git will not read for us, counts as one; no git at all does not)."""
    from migrate.gitsafe import inside_work_tree

    return [f for f in sorted(set(folders)) if inside_work_tree(f) is False]


def _riders_with_edits(units: list) -> dict:
    """(path, key) of each wrapper call with edits of its own -> its unit's file."""
    return {
        (f.path, f.key): u.path
        for u in units
        for f in u.findings
        if f.autofix is not None and f.autofix.rides and f.autofix.edits
    }


def _own_rider_fixes(findings: list[Finding], riders: dict, result: ApplyResult) -> list[Finding]:
    """A wrapper call passing example inputs is written in its own file, as a fix of its
    own, once its unit's file was fixed (files are fixed in that order); when that file was
    not, the call is left as it is."""
    done = {f.path for f in result.fixes if f.error is None and f.changed}
    out = []
    for f in findings:
        unit_path = riders.get((f.path, f.key))
        if unit_path is not None and f.autofix is not None:
            kept = unit_path in done or unit_path == f.path
            fix = dataclasses.replace(f.autofix, rides=()) if kept else None
            f = dataclasses.replace(f, autofix=fix)
        out.append(f)
    return out


def _count_riders(result: ApplyResult, units: list) -> None:
    """A wrapper call in another file rides on its wrapper's unit (plan.units): fixed, and
    counted in the wrapper's file, when every finding it rides on was written there (one
    with edits of its own is counted in its own file)."""
    fixes = {f.path: f for f in result.fixes if f.error is None and f.changed}
    for unit in units:
        riders = [f for f in unit.findings if f.path != unit.path and not f.autofix.edits]
        fix = fixes.get(unit.path)
        if not riders or fix is None:
            continue
        applied = {(a.path, a.key) for a in fix.applied}
        if all(tuple(k) in applied for r in riders for k in r.autofix.rides):
            fix.applied.extend(r for r in riders if (r.path, r.key) not in applied)


# Why a file is skipped whose text is not the one its fixes were computed on.
CHANGED = "changed since it was read; left untouched"


def _read(
    result: ApplyResult, scanner: Scanner, display: str, path: Path
) -> tuple[bytes, Decoded] | None:
    """The file's bytes and text, or None (an error recorded) when it cannot be read or is
    not the text the scan computed its findings on."""
    job = getattr(scanner, "jobs", {}).get(display)
    try:
        # The scan's checked read: a regular file inside the tree, within the size cap.
        raw = job.read() if job is not None else read_checked(path)
        decoded = decode(raw)
    except Skipped as exc:
        result.errors.append(FileError(display, f"{exc}; left untouched"))
        return None
    except (OSError, UnicodeDecodeError, SyntaxError) as exc:
        result.errors.append(FileError(display, f"cannot read: {exc}"))
        return None
    scanned = getattr(scanner, "_results", {}).get(display)
    if scanned is not None and scanned.digest is not None and scanned.digest != digest(raw):
        result.errors.append(FileError(display, CHANGED))
        return None
    return raw, decoded


def _digest_now(path: Path) -> str | None:
    """The digest of the file as it is now, None when it is no longer a regular file."""
    try:
        return digest(read_checked(path, max_size=1 << 62))
    except Skipped:
        return None


def _write(
    result: ApplyResult,
    trees: _Trees,
    display: str,
    path: Path,
    decoded: Decoded,
    fix: FileFix,
) -> None:
    if _refused_outside(trees, display, result):  # a folder swapped for a symlink meanwhile
        fix.error = result.errors[-1].message
        return
    try:
        if fix.source_digest is not None and _digest_now(path) != fix.source_digest:
            # Edited while the fixes were computed: the user's text wins.
            fix.error = CHANGED
            result.errors.append(FileError(display, fix.error))
            return
        links = os.stat(path).st_nlink
        write_atomic(path, encode(decoded, fix.fixed))
    except (OSError, UnsafeOutput) as exc:
        # One unwritable folder must not stop the files after it.
        why = exc.reason if isinstance(exc, UnsafeOutput) else _os_reason(exc)
        fix.error = f"cannot write: {why}"
        result.errors.append(FileError(display, fix.error))
        return
    result.written.append(display)
    if links > 1:
        others = "the other name keeps" if links == 2 else f"the other {links - 1} names keep"
        result.notes.append(
            FileError(
                display,
                f"was a hard link; it is now a file of its own and {others} the old text",
            )
        )


def _apply_gated(
    result: ApplyResult,
    scanner: Scanner,
    trees: _Trees,
    todo: list[str],
    units: list,
    by_path: dict[str, list[Finding]],
    test_gate: Callable[..., Any],
    dry_run: bool,
    replan: Callable[[list, dict[int, str]], dict[int, str]],
) -> None:
    """apply --test: one round of fixes per file, only the units the tests keep, written
    once after every test run (Ctrl-C before then leaves the tree as it was)."""
    sources: dict[str, tuple[Path, Decoded]] = {}
    read_digests: dict[str, bytes] = {}
    dropped: set[int] = set()  # units not gated: a file of theirs cannot take them
    for display in todo:
        path = Path(scanner.jobs[display].path)
        read = _read(result, scanner, display, path)
        mine = [u for u in units if display in u.paths]
        if read is None:
            dropped |= {id(u) for u in mine}
            continue
        raw, decoded = read
        read_digests[display] = digest(raw)
        # Units whose edits overlap an earlier one wait for a later run, as in fix_source.
        taken = {id(f) for f in take_units([u.view(display) for u in mine])[0]}
        dropped |= {
            id(u) for u in mine if any(id(f) not in taken for f in u.view(display).findings)
        }
        mine = [u for u in mine if id(u) not in dropped]
        try:
            apply_units(display, decoded.text, mine, decoded.newline)
        except ValueError as exc:
            result.errors.append(FileError(display, f"{exc}; left untouched"))
            dropped |= {id(u) for u in mine}
            continue
        sources[display] = (path, decoded)
    gated = [u for u in units if id(u) not in dropped and u.path in sources]
    report = test_gate(gated, sources, replan=functools.partial(replan, gated))
    result.test_report = report
    kept = {id(gated[i]) for i in report.kept}
    for r in report.reverted:
        tests = ", ".join(sorted(r.tests))
        result.held.extend(Held(f, f"reverted: it broke {tests}") for f in gated[r.unit].findings)
        for h in r.held:
            why = f"held because {r.reason(gated)}; {h.reason}"
            result.held.extend(Held(f, why) for f in gated[h.unit].findings)
    for display, (path, decoded) in sources.items():
        mine = [u for u in gated if id(u) in kept and display in u.paths]
        applied = [f for u in mine for f in u.view(display).findings]
        fixed = apply_units(display, decoded.text, mine, decoded.newline)
        done = {id(f) for f in applied}
        remaining = [f for f in by_path[display] if id(f) not in done]
        if not dry_run:  # the planned findings' positions are the original text's
            remaining = relocate(remaining, decoded.text, fixed)
        fix = FileFix(display, decoded.text, fixed, applied, remaining)
        fix.source_digest = read_digests[display]
        result.fixes.append(fix)
        if fix.changed and not dry_run:
            _write(result, trees, display, path, decoded, fix)


def _keep_held(original: list[Finding], held: dict) -> Callable[[list[Finding]], list[Finding]]:
    """Later fix rounds re-analyse the file: a fix held back in the first round stays held,
    for the reason the first round gave (`held`: finding key -> reason).

    Positions move as edits land, so a held finding is recognised by its rule, symbol and
    the text of its first line, which its own (unwritten) fix never changed.
    """
    from migrate.plan.fixplan import demote

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
                reason = held.get(finding_key(before))
                if reason is None:  # held by its own check: keep what it said
                    f = dataclasses.replace(f, fix=before.fix, autofix=None, message=before.message)
                else:
                    f = demote(f, reason)
            out.append(f)
        return out

    return replan


# git status codes of files apply will not overwrite without --allow-dirty.
DIRTY_REASONS = {
    "??": "is not tracked by git",
    "!!": "is ignored by git",
    "?": "git could not say whether it has uncommitted changes",
    # Marks that hide a file's edits from `git status` (gitsafe.hidden_changes).
    "assume-unchanged": "is marked assume-unchanged in git and differs from the index",
    "skip-worktree": "is marked skip-worktree in git and differs from the index",
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


# --------------------------------------------------------------------------- the tree


def tree_root(given: str | Path) -> Path:
    """The real path of the tree a path named on the command line belongs to: the git work
    tree holding it, looked for from where the path is spelled (a symlinked folder inside a
    repository is in that repository, wherever it points), else the folder itself (a file's
    own folder)."""
    path = Path(os.path.abspath(given))
    start = path if path.is_dir() else path.parent
    for folder in (start, *start.parents):
        if os.path.exists(folder / ".git"):
            return Path(os.path.realpath(folder))
    return Path(os.path.realpath(start))


class _Trees:
    """Each scanned file's tree and real path: what apply writes must lie inside its tree."""

    def __init__(self, scanner: Scanner) -> None:
        self.jobs = scanner.jobs
        self._roots: dict[str, str] = {}

    def root(self, display: str) -> str:
        found = self.jobs[display].root
        if found not in self._roots:
            self._roots[found] = str(tree_root(found))
        return self._roots[found]

    def outside(self, path: str, display: str) -> str | None:
        """`path`'s real path when it lies outside the tree `display` was found in."""
        real, root = os.path.realpath(path), self.root(display)
        return None if real == root or real.startswith(root.rstrip(os.sep) + os.sep) else real

    def aliases(self, displays: Iterable[str]) -> set[str]:
        """Those of `displays` that name a file scanned under another name too, but for the
        one name each is fixed under (not a symlink, the fewest `..`, the shortest)."""
        by_real: dict[str, list[str]] = {}
        for display in set(displays):
            by_real.setdefault(os.path.realpath(self.jobs[display].path), []).append(display)
        out: set[str] = set()
        for names in by_real.values():
            if len(names) > 1:
                keep = min(names, key=self._preference)
                out.update(n for n in names if n != keep)
        return out

    def _preference(self, display: str) -> tuple:
        return (os.path.islink(self.jobs[display].path), display.count(".."), len(display), display)


def _refused_outside(trees: _Trees, display: str, result: ApplyResult) -> bool:
    real = trees.outside(trees.jobs[display].path, display)
    if real is None:
        return False
    result.errors.append(
        FileError(
            display,
            f"resolves to {real}, outside the tree being migrated ({trees.root(display)}); "
            "not written",
        )
    )
    return True


def _remove_stale_temps(trees: _Trees, started: float, result: ApplyResult) -> None:
    """Temp files an earlier run was killed before renaming (kill -9): removed, each said."""
    folders: dict[str, str] = {}
    for display, job in trees.jobs.items():
        folders.setdefault(os.path.dirname(job.path) or ".", display)
    for folder, display in sorted(folders.items()):
        if trees.outside(folder, display) is not None:
            continue
        for name, pid in stale_temp_files(folder, started):
            try:
                os.unlink(os.path.join(folder, name))
            except OSError:
                continue
            shown = os.path.join(os.path.dirname(display), name)
            result.notes.append(
                FileError(shown, f"removed: left by a `migrate apply` (pid {pid}) that was killed")
            )


# --------------------------------------------------------------------------- the lock

LOCK_FILE = "apply.lock"


class ApplyLocked(UsageError):
    """Another `migrate apply` holds the lock of a tree this one would write in."""


@contextmanager
def tree_locks(paths: Iterable[str | Path]) -> Iterator[None]:
    """Hold the apply lock of each tree the paths lie in, or raise ApplyLocked."""
    roots = sorted({str(tree_root(p)) for p in paths if os.path.exists(p)})
    with ExitStack() as stack:
        for root in roots:
            stack.enter_context(_tree_lock(root))
        yield


@contextmanager
def _tree_lock(root: str) -> Iterator[None]:
    """`apply.lock` in the tree's state folder (its cache folder, outside the tree): locked
    with flock, which the system drops when the holder exits or is killed, so a lock left by
    a dead run is simply taken over. It holds the holder's pid, for the message."""
    path = default_cache_folder([root]) / LOCK_FILE
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError:
        # No state folder (a read-only home): the per-file checks still guard each write.
        yield
        return
    try:
        if not _try_lock(fd):
            holder = os.read(fd, 32).decode("ascii", "replace").strip()
            who = f"pid {holder}" if holder.isdigit() else "pid not yet written"
            raise ApplyLocked(
                f"another `migrate apply` ({who}) is rewriting {root}; run again once it has "
                f"finished (lock: {path})"
            )
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        yield
    finally:
        os.close(fd)


def _try_lock(fd: int) -> bool:
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        import msvcrt

        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True
