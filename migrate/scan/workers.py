"""The work of a scan on each file, in this process or in a pool's worker: the file read
with its size cap and inside its tree, skipped unparsed when its text cannot hold a finding
(the words of its import lines kept for the re-export pass), else analysed with the
worker's checks, for phase 1 or for the repository pass.
"""

from __future__ import annotations

import functools
import gc
import os
import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import PurePosixPath

from migrate.analysis import parsed as parse_once
from migrate.analysis.parsed import GC_THRESHOLDS
from migrate.analysis.repository_facts import RepositoryFacts
from migrate.analysis.textsearch import lines_holding
from migrate.scan.cache import digest
from migrate.scan.checkset import CheckSet
from migrate.scan.discover import (
    DEFAULT_MAX_FILE_SIZE,
    Skipped,
    checked_stat,
    decode_source,
    in_package,
    module_name,
    read_checked,
)
from migrate.scan.file_analysis import (
    FileResult,
    analyze_python,
    analyze_text_file,
    drop_suppressed,
)

# Searched in "\n" + text: a literal first character lets the regex engine skip ahead.
# A line that starts an import, matched from the line's start (import_words).
IMPORT_LINE = re.compile(r"[ \t]*(?:from[ \t]+[.\w]+[ \t]+import|import)[ \t]+[^\n]*")
WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class RepoPass:
    """A second analysis with the repository's merged facts: `codes` alone (None: all)."""

    codes: tuple[str, ...] | None
    # None: the facts the worker was started with (sent once per process, not per batch).
    facts: RepositoryFacts | None

    def merged_facts(self) -> RepositoryFacts:
        return self.facts if self.facts is not None else WORKER_STATE["repo_facts"]  # type: ignore[return-value]


@dataclass(frozen=True)
class FileJob:
    path: str
    display: str
    root: str
    python: bool
    # How it may be read (discover.read_checked): the real scan root a symlink must stay
    # inside (None for a file named on the command line), and the size cap.
    confine: str | None = None
    limit: int = DEFAULT_MAX_FILE_SIZE

    def stat(self) -> os.stat_result:
        return checked_stat(self.path, self.limit, self.confine)

    def read(self) -> bytes:
        return read_checked(self.path, self.limit, self.confine)

    @functools.cached_property
    def module(self) -> str:
        # Computed only for the files that get parsed, once each (the pass and the facts ask
        # again): most never need it.
        return module_name(self.path, self.root)

    @property
    def is_package(self) -> bool:
        return os.path.basename(self.path) == "__init__.py"

    @property
    def script_dir(self) -> str:
        """Dotted folder of a module outside any package ("" in a package or at the root)."""
        return "" if in_package(self.path) else self.module.rpartition(".")[0]


WORKER_STATE: dict[str, object] = {}


# The collector's thresholds while a scan runs (migrate.analysis.parsed.GC_THRESHOLDS).
_SCAN_GC_THRESHOLDS = GC_THRESHOLDS


@contextmanager
def rare_collections() -> Iterator[None]:
    old = gc.get_threshold()
    gc.set_threshold(*_SCAN_GC_THRESHOLDS)
    try:
        yield
    finally:
        gc.set_threshold(*old)


def pool_worker_init(
    codes: list[str],
    options: dict,
    per_file_ignores: dict,
    repo_facts: RepositoryFacts | None,
    hints: Callable | None = None,
    repository_pass: object = None,
    tree_budget: int = 0,
) -> None:
    gc.set_threshold(*_SCAN_GC_THRESHOLDS)  # a worker process only ever scans
    parse_once.keep_trees(False)  # each file of its batches is analysed here once
    parse_once.retire_trees(tree_budget)
    worker_init(codes, options, per_file_ignores, hints)
    WORKER_STATE["repo_facts"] = repo_facts
    # A repository pass's inputs (scan.repository_pass.PassInputs): inherited by a forked
    # worker, never copied.
    WORKER_STATE["pass"] = repository_pass


def worker_init(
    codes: list[str], options: dict, per_file_ignores: dict, hints: Callable | None = None
) -> None:
    WORKER_STATE["checks"] = CheckSet(codes, options)
    WORKER_STATE["hints"] = hints
    WORKER_STATE["pfi"] = per_file_ignores
    WORKER_STATE["options"] = options
    WORKER_STATE["subsets"] = {}
    evidence = options.get("evidence")  # what a `migrate record` run saw
    if evidence or "migrate.record.evidence" in sys.modules:
        from migrate.record.evidence import activate

        activate(evidence)


def _checks_for(codes: tuple[str, ...] | None) -> CheckSet:
    if codes is None:
        return WORKER_STATE["checks"]  # type: ignore[return-value]
    subsets: dict = WORKER_STATE["subsets"]  # type: ignore[assignment]
    if codes not in subsets:
        subsets[codes] = CheckSet(codes, WORKER_STATE["options"])  # type: ignore[arg-type]
    return subsets[codes]


def run_job(
    job: FileJob, exports: dict[str, str] | None = None, repo: RepoPass | None = None
) -> FileResult:
    try:
        data = job.read()
        file_digest = digest(data)
        if not job.python and not _may_match(job, data):
            return FileResult(job.display, digest=file_digest)
        text = decode_source(data)
    except UnicodeDecodeError as exc:
        reason = exc.reason if exc.encoding == "binary" else f"not valid {exc.encoding} text"
        return FileResult(job.display, error=f"cannot decode: {reason}")
    except Skipped as exc:
        return FileResult(job.display, skipped=str(exc))
    except FileNotFoundError as exc:
        if os.path.islink(job.path):  # a link to a file the checkout lacks: nothing to scan
            return FileResult(job.display, skipped="a symlink to a missing file")
        return FileResult(job.display, error=f"cannot read: {_os_reason(exc)}")
    except (OSError, SyntaxError, LookupError) as exc:
        return FileResult(job.display, error=f"cannot read: {_os_reason(exc)}")
    try:
        result = analyze_loaded(job, text, exports, repo=repo)
    except Exception as exc:  # a bug in a check: this file becomes an error record
        if os.environ.get("MIGRATE_DEBUG"):
            raise
        message = f"internal error: {type(exc).__name__}: {exc}"
        return FileResult(job.display, error=f"{message} (rerun with --debug for the traceback)")
    result.digest = file_digest
    return result


def _may_match(job: FileJob, data: bytes) -> bool:
    """Whether a non-Python file's bytes can hold a finding (its text checks' prefilters, as
    bytes). Files that cannot are never decoded: a Latin-1 C++ source or a binary header that
    no check reads is not an error."""
    checks = _checks_for(None).text_checks_for(PurePosixPath(job.display))
    if not checks or any(not c.prefilter for c in checks):
        return True
    return any(_bytes_pattern(c.prefilter).search(data) for c in checks)


@functools.lru_cache(maxsize=64)
def _bytes_pattern(pattern: str) -> re.Pattern[bytes]:
    return re.compile(pattern.encode())


def analyze_loaded(
    job: FileJob,
    text: str,
    exports: dict[str, str] | None = None,
    prefilter: bool = True,
    repo: RepoPass | None = None,
) -> FileResult:
    """Analyse one file's text (already read) with the worker's checks."""
    checks = _checks_for(repo.codes if repo else None)
    if repo and repo.codes is not None:
        # The repository pass: only the checks that asked for it, on a file they selected.
        # Its findings replace the checks' phase-1 findings; the rest, planner hints
        # included, stays from phase 1 (_repo_pass).
        args = (job.module, job.is_package, exports, job.script_dir)
        result = analyze_python(job.display, text, checks, *args, repo_facts=repo.merged_facts())
        drop_suppressed(result, text, WORKER_STATE["pfi"])  # type: ignore[arg-type]
        return result
    text_checks = checks.text_checks_wanted(PurePosixPath(job.display), text)
    if job.python:
        if prefilter and not exports and not repo and not checks.wants_parse(text):
            # Not parsed; remember the words of its import lines so the re-export pass can
            # tell, without reading the file again, whether it imports a re-exporting module.
            lines = lines_holding(text, "import")
            result = FileResult(job.display, import_words=import_words(text, lines))
            result.remembered = checks.remembered(text, lines)
        else:
            facts = repo.merged_facts() if repo else None
            args = (job.module, job.is_package, exports, job.script_dir)
            hints = WORKER_STATE.get("hints")
            result = analyze_python(
                job.display,
                text,
                checks,
                *args,
                repo_facts=facts,
                hints=hints,  # type: ignore[arg-type]
            )
        if text_checks and result.error is None:
            # Text checks that also read Python files (setup.py pins, CUDA paths in strings).
            result.findings += analyze_text_file(job.display, text, text_checks).findings
        if not result.findings:
            return result
    else:
        if not text_checks:
            return FileResult(job.display)
        result = analyze_text_file(job.display, text, text_checks)
    drop_suppressed(result, text, WORKER_STATE["pfi"])  # type: ignore[arg-type]
    return result


def import_words(text: str, lines: list[tuple[int, int]] | None = None) -> set[str]:
    """The words of the lines that start an import statement (`IMPORT_LINE` at a line's
    start), among the `lines` that hold "import" (found here when not given)."""
    if lines is None:
        lines = lines_holding(text, "import")
    found = []
    for start, end in lines:
        match = IMPORT_LINE.match(text, start, end)
        if match:
            found.append(match.group())
    return set(WORD.findall("\n".join(found)))


def run_batch(batch: list[tuple]) -> list[FileResult]:
    return [run_job(*item) for item in batch]


# A pool's batch holds at most this many files, and about 1 / (workers * BATCHES_PER_WORKER)
# of the bytes: a batch sent to a worker is one round trip, and the last ones should be short.
MAX_BATCH_FILES = 128
BATCHES_PER_WORKER = 32


def size_balanced_batches(sizes: list[int], workers: int) -> list[list[int]]:
    """The jobs' indices in batches for a pool of `workers`, sent in this order: the largest
    files first (each alone, once it holds the byte share of a batch), the smallest last,
    many to a batch. A pool hands the next batch to whichever worker is free, so the
    workers finish together instead of one analysing a large file met at the end."""
    order = sorted(range(len(sizes)), key=lambda i: -sizes[i])  # stable: ties keep job order
    share = max(1, sum(sizes) // (workers * BATCHES_PER_WORKER))
    batches: list[list[int]] = []
    batch: list[int] = []
    held = 0
    for i in order:
        batch.append(i)
        held += sizes[i]
        if held >= share or len(batch) >= MAX_BATCH_FILES:
            batches.append(batch)
            batch, held = [], 0
    if batch:
        batches.append(batch)
    return batches


def _os_reason(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror.lower()
    if isinstance(exc, SyntaxError):  # a bad PEP 263 coding cookie
        return str(exc.msg)
    return str(exc)
