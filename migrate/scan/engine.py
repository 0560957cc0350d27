"""The scan pipeline: discover -> prefilter -> parse once (ast) -> resolve names -> checks.

Phase 1 analyses every file whose text can hold a finding. Names that a file imports from
another module of the same repository are resolved afterwards: files that import a
re-exported torch.jit name are analysed again with the repository's export table (rare).
"""

from __future__ import annotations

import ast
import fnmatch
import functools
import gc
import io
import os
import re
import sys
import tokenize
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath

from migrate.analysis import parsed as parse_once
from migrate.analysis.astwalk import DEEP_RECURSION, recursion_limit
from migrate.analysis.parsed import GC_THRESHOLDS, KEEP_BYTES, parsed_file
from migrate.analysis.pyscope import ScopeTable, shared_table
from migrate.analysis.repository_facts import KEYS_VERSION, NO_FACTS, FileFacts, RepositoryFacts
from migrate.checks.base import (
    FileContext,
    PythonContext,
    TextCheck,
    is_suppressed,
)
from migrate.findings import FileError, Finding, ScanResult
from migrate.registry import Rule, all_rules, select_codes
from migrate.scan.cache import ResultCache, default_cache_folder, digest, stat_key
from migrate.scan.checkset import TORCHSCRIPT_WORDS, CheckSet  # noqa: F401 (also imported from here)
from migrate.scan.discover import (
    DEFAULT_MAX_FILE_SIZE,
    Skipped,
    SourceFile,
    checked_stat,
    decode_source,
    discover,
    module_name,
    read_checked,
    read_source,
)
from migrate.scan.reexports import (
    ExportTable,
    close_exports,
    export_table,
    imports_module,
    outside_exports,
    reexportable,
)
from migrate.scan.walker import Walker

# Searched in "\n" + text: a literal first character lets the regex engine skip ahead.
# A line that starts an import, matched from the line's start (import_words).
IMPORT_LINE = re.compile(r"[ \t]*(?:from[ \t]+[.\w]+[ \t]+import|import)[ \t]+[^\n]*")
WORD = re.compile(r"\w+")

PARALLEL_THRESHOLD = 48  # below this many parsed files a process pool costs more than it saves
# Source bytes a scan parses in its own process before a pool of two takes the rest (with n
# workers, this over n - 1): as much as the scan keeps trees of (analysis.parsed.KEEP_BYTES).
# A file a worker parsed is parsed again here when the planner's facts or the repository pass
# read it, which is most files that hold TorchScript: on the development corpus (2,306 files,
# 4 MB parsed) a pool after the first 1 MB cost 22% more CPU than one process, and at four
# times that tree the facts alone took 3.4 s of a pooled run's 15 s (1.2 s in one process).
POOL_AFTER_BYTES = KEEP_BYTES


@dataclass
class ScanOptions:
    select: list[str] | None = None
    ignore: list[str] | None = None
    exclude: list[str] = field(default_factory=list)
    per_file_ignores: dict[str, list[str]] = field(default_factory=dict)
    cuda: str = "13.0"
    intent: str | None = None  # drop | keep-scriptable | None (per site)
    scripted_functions: str = "eager"  # eager | compile
    jobs: int | None = None
    use_git: bool = True
    cache: bool = True
    cache_dir: Path | None = None
    max_file_size: int = DEFAULT_MAX_FILE_SIZE  # [tool.migrate] max-file-size
    evidence: str | None = None  # a `migrate record` evidence file (issue 28)
    # Without an intent: also count the fixes each intent would write (`--compare-intents`,
    # plan.fixplan.attach_unlocks); it changes no finding.
    compare_intents: bool = False

    def codes(self) -> list[str]:
        return select_codes(self.select, self.ignore)


@dataclass
class FileResult:
    path: str
    findings: list[Finding] = field(default_factory=list)
    error: str | None = None
    parsed: bool = False
    exports: dict[str, str] = field(default_factory=dict)
    repo_imports: set[str] = field(default_factory=set)
    digest: bytes | None = None
    skipped: str | None = None  # not read at all (discover.Skipped): why, for a note
    import_words: set[str] = field(default_factory=set)
    facts: dict[str, set[str]] = field(default_factory=dict)  # what ctx.facts told
    remembered: set[str] = field(default_factory=set)  # checks' `remember` words, unparsed files
    # Findings judged for outcomes of the repository pass (PythonContext.variants).
    variants: dict[str, dict[frozenset[str], list[Finding]]] = field(default_factory=dict)
    # Certain that no call here is a TorchScript maker (the fix planner's capture search then
    # skips the file); False also where nobody looked.
    no_makers: bool = False
    no_sites: bool = False  # likewise for the artifact-site search


@dataclass(frozen=True)
class RepoPass:
    """A second analysis with the repository's merged facts: `codes` alone (None: all)."""

    codes: tuple[str, ...] | None
    # None: the facts the worker was started with (sent once per process, not per batch).
    facts: RepositoryFacts | None

    def merged_facts(self) -> RepositoryFacts:
        return self.facts if self.facts is not None else _WORKER_STATE["repo_facts"]  # type: ignore[return-value]


# --------------------------------------------------------------------------- one file


def _syntax_error(exc: SyntaxError) -> str:
    where = f"line {exc.lineno}" if exc.lineno else "unknown line"
    if exc.msg and "Missing parentheses in call to 'print'" in exc.msg:
        return f"cannot parse ({where}): Python 2 syntax is not supported"
    return f"cannot parse ({where}): {exc.msg}"


def analyze_python(
    display: str,
    text: str,
    checks: CheckSet,
    module: str = "",
    is_package: bool = False,
    exports: dict[str, str] | None = None,
    script_dir: str = "",
    repo_facts: RepositoryFacts | None = None,
    hints: Callable[[str, ast.Module, ScopeTable], tuple[bool, bool]] | None = None,
) -> FileResult:
    result = FileResult(display)
    with recursion_limit(DEEP_RECURSION):
        try:
            # Parsed once per scan: a later stage asking for this text gets this tree.
            parsed = parsed_file(display, text)
            tree = parsed.tree
        except SyntaxError as exc:
            result.error = _syntax_error(exc)
            return result
        except RecursionError:
            result.error = "cannot parse: expressions nested too deeply"
            return result
        except ValueError as exc:
            result.error = f"cannot parse: {exc}"
            return result
        try:
            table = shared_table(parsed, module, is_package, exports, script_dir)
            exported = table.module_exports()
            ctx = PythonContext(display, text, tree, table)
            ctx.repo_facts = repo_facts or NO_FACTS
            ctx.intent = checks.options.get("intent")
            Walker(ctx, checks).run()
        except RecursionError:
            result.error = "cannot analyse: expressions nested too deeply"
            return result
        try:  # hints for the fix planner's searches; without them it searches the file itself
            if hints is not None:  # (no_makers, no_sites): given by the pipeline (Scanner.hints)
                result.no_makers, result.no_sites = hints(text, tree, table)
        except RecursionError:
            result.no_makers = result.no_sites = False
    result.parsed = True
    result.exports = reexportable(exported, checks)
    result.repo_imports = table.repo_imports
    result.facts = ctx.facts.told()
    result.findings = _once(ctx.findings)
    result.variants = {
        code: {outcome: _once(found) for outcome, found in outcomes.items()}
        for code, outcomes in ctx.variants.items()
    }
    return result


def _once(findings: list[Finding]) -> list[Finding]:
    """One finding per rule and span: a check that hears of a node twice (a symbol reference
    and a node hook on the same call) still reports it once."""
    seen: set[tuple] = set()
    out = []
    for f in findings:
        key = (f.rule, f.line, f.column, f.end_line, f.end_column, f.symbol)
        if key not in seen:
            seen.add(key)
            out.append(f)
    return out


def analyze_text_file(display: str, text: str, checks: list[TextCheck]) -> FileResult:
    result = FileResult(display, parsed=True)
    ctx = FileContext(display, text)
    for check in checks:
        check.check(ctx)
    result.findings = ctx.findings
    return result


def _comments(text: str, python: bool) -> dict[int, str] | list[str]:
    """Where suppression comments can be: real comments of a Python file (a `# migrate:
    ignore` inside a string does not count), whole lines of any other file."""
    lines = text.splitlines()
    if not python or "migrate:" not in text:
        return lines
    found: dict[int, str] = {}
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.COMMENT:
                found[tok.start[0]] = tok.string
    except (tokenize.TokenError, SyntaxError):
        return lines
    return found


def _suppress(result: FileResult, text: str, per_file_ignores: dict[str, list[str]]) -> None:
    """Drop the findings (and their phase-1 variants) a `# migrate: ignore` comment or a
    per-file-ignores entry silences."""
    if not result.findings:
        return
    comments = _comments(text, result.path.endswith((".py", ".pyi")))
    ignored = [
        code
        for pattern, codes in per_file_ignores.items()
        if fnmatch.fnmatchcase(result.path, pattern)
        or fnmatch.fnmatchcase(result.path, f"*/{pattern}")
        for code in codes
    ]

    def heard(f: Finding) -> bool:
        if any(f.rule.startswith(c.upper()) for c in ignored):
            return False
        if isinstance(comments, dict):
            first, last = comments.get(f.line, ""), comments.get(f.end_line, "")
        else:
            first = comments[f.line - 1] if f.line - 1 < len(comments) else ""
            last = comments[f.end_line - 1] if f.end_line - 1 < len(comments) else ""
        return not (is_suppressed(first, f.rule) or is_suppressed(last, f.rule))

    result.findings = [f for f in result.findings if heard(f)]
    for outcomes in result.variants.values():
        for outcome, found in outcomes.items():
            outcomes[outcome] = [f for f in found if heard(f)]


# --------------------------------------------------------------------------- workers


@dataclass(frozen=True)
class _Job:
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

    @property
    def module(self) -> str:
        # Computed only for the files that get parsed: most never need it.
        return module_name(self.path, self.root)

    @property
    def is_package(self) -> bool:
        return os.path.basename(self.path) == "__init__.py"

    @property
    def script_dir(self) -> str:
        """Dotted folder of a module outside any package ("" in a package or at the root)."""
        if os.path.exists(os.path.join(os.path.dirname(self.path), "__init__.py")):
            return ""
        return self.module.rpartition(".")[0]


_WORKER_STATE: dict[str, object] = {}


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


def _pool_worker_init(
    codes: list[str],
    options: dict,
    per_file_ignores: dict,
    repo_facts: RepositoryFacts | None,
    hints: Callable | None = None,
) -> None:
    gc.set_threshold(*_SCAN_GC_THRESHOLDS)  # a worker process only ever scans
    parse_once.keep_trees(False)  # each file of its batches is analysed here once
    _worker_init(codes, options, per_file_ignores, hints)
    _WORKER_STATE["repo_facts"] = repo_facts


def _worker_init(
    codes: list[str], options: dict, per_file_ignores: dict, hints: Callable | None = None
) -> None:
    _WORKER_STATE["checks"] = CheckSet(codes, options)
    _WORKER_STATE["hints"] = hints
    _WORKER_STATE["pfi"] = per_file_ignores
    _WORKER_STATE["options"] = options
    _WORKER_STATE["subsets"] = {}
    evidence = options.get("evidence")  # issue 28: what a `migrate record` run saw
    if evidence or "migrate.record.evidence" in sys.modules:
        from migrate.record.evidence import activate

        activate(evidence)


def _checks_for(codes: tuple[str, ...] | None) -> CheckSet:
    if codes is None:
        return _WORKER_STATE["checks"]  # type: ignore[return-value]
    subsets: dict = _WORKER_STATE["subsets"]  # type: ignore[assignment]
    if codes not in subsets:
        subsets[codes] = CheckSet(codes, _WORKER_STATE["options"])  # type: ignore[arg-type]
    return subsets[codes]


def _run_job(
    job: _Job, exports: dict[str, str] | None = None, repo: RepoPass | None = None
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


def _may_match(job: _Job, data: bytes) -> bool:
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
    job: _Job,
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
        _suppress(result, text, _WORKER_STATE["pfi"])  # type: ignore[arg-type]
        return result
    text_checks = checks.text_checks_wanted(PurePosixPath(job.display), text)
    if job.python:
        if prefilter and not exports and not repo and not checks.wants_parse(text):
            # Not parsed; remember the words of its import lines so the re-export pass can
            # tell, without reading the file again, whether it imports a re-exporting module.
            words = import_words(text)
            result = FileResult(job.display, import_words=words)
            result.remembered = checks.remembered(text)
        else:
            facts = repo.merged_facts() if repo else None
            args = (job.module, job.is_package, exports, job.script_dir)
            hints = _WORKER_STATE.get("hints")
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
    _suppress(result, text, _WORKER_STATE["pfi"])  # type: ignore[arg-type]
    return result


def import_words(text: str) -> set[str]:
    """The words of the lines that start an import statement (`IMPORT_LINE` at a line's
    start). Only lines holding "import" are tried: a regex tried at every line start cost
    twice as much."""
    lines = []
    at = text.find("import")
    while at >= 0:
        start = text.rfind("\n", 0, at) + 1
        end = text.find("\n", at)
        if end < 0:
            end = len(text)
        match = IMPORT_LINE.match(text, start, end)
        if match:
            lines.append(match.group())
        at = text.find("import", end)
    return set(WORD.findall("\n".join(lines)))


def _run_batch(batch: list[tuple]) -> list[FileResult]:
    return [_run_job(*item) for item in batch]


def _os_reason(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror.lower()
    if isinstance(exc, SyntaxError):  # a bad PEP 263 coding cookie
        return str(exc.msg)
    return str(exc)


# --------------------------------------------------------------------------- the pipeline


class Scanner:
    """The scan stage alone: findings as the checks report them. A command's pipeline
    (migrate.pipeline.scan) builds the facts and plans; it gives the per-file `hints` and
    hears when the repository pass starts (`pool_pass_starts`), and `keep`s its outcome."""

    # (text, tree, scope table) -> (no_makers, no_sites): the facts' hints, computed on the
    # tree each worker already has. A module-level function: it travels to the workers.
    hints: Callable[[str, ast.Module, ScopeTable], tuple[bool, bool]] | None = None

    def __init__(self, options: ScanOptions, progress: Callable[[int], None] | None = None):
        self.options = options
        self.codes = options.codes()
        self.check_options = {
            "cuda": options.cuda,
            "intent": options.intent,
            "scripted_functions": options.scripted_functions,
        }
        if options.evidence:
            self.check_options["evidence"] = options.evidence
        _worker_init(self.codes, self.check_options, options.per_file_ignores, self.hints)
        self.checks: CheckSet = _WORKER_STATE["checks"]  # type: ignore[assignment]
        self.progress = progress
        self.repo_facts = NO_FACTS
        self.kept: list[Finding] | None = None  # what `keep` stored, for an unchanged tree
        self._final: tuple | None = None  # where `keep` stores it

    def jobs_for(self, files: list[SourceFile]) -> list[_Job]:
        jobs = []
        real_roots: dict[Path, str] = {}
        limit = self.options.max_file_size
        for f in files:
            python = f.is_python
            if not python and not self.checks.text_checks_for(PurePosixPath(f.display)):
                continue
            confine = None
            if not f.named:
                confine = real_roots.get(f.root)
                if confine is None:
                    confine = real_roots[f.root] = os.path.realpath(f.root)
            jobs.append(_Job(str(f.path), f.display, str(f.root), python, confine, limit))
        return jobs

    def _workers(self, count: int) -> int:
        """How many processes run `count` jobs (1: this one)."""
        workers = self.options.jobs or os.cpu_count() or 1
        return 1 if workers <= 1 or count < PARALLEL_THRESHOLD else workers

    def _execute(
        self,
        work: list[tuple],
        repo_facts: RepositoryFacts | None = None,
        on_pool: Callable[[], None] | None = None,
    ) -> list[FileResult]:
        """Run the jobs here or in a process pool; `repo_facts`: what a RepoPass without
        facts of its own reads (megabytes on a large tree: sent to each process once).
        `on_pool` is called when the rest goes to the pool (this process then only waits)."""
        workers = self._workers(len(work))
        _WORKER_STATE["repo_facts"] = repo_facts
        results: list[FileResult] = []
        # The jobs start here; a pool takes the rest only once this process has parsed enough
        # to show it pays: most files of a repository are never parsed, and on a tree that
        # parses little the pool's start, and the later stages parsing again what its
        # workers parsed (their trees stay there), cost more than it saves.
        start = parse_once.parsed_bytes()
        enough = POOL_AFTER_BYTES // max(workers - 1, 1)
        for item in work:
            if (
                workers > 1
                and parse_once.parsed_bytes() - start >= enough
                and len(work) - len(results) >= PARALLEL_THRESHOLD
            ):
                break
            results.append(_run_job(*item))
            if self.progress:
                self.progress(1)
        else:
            return results
        work = work[len(results) :]
        if on_pool is not None:
            on_pool()
        size = max(8, len(work) // (workers * 8))
        batches = [work[i : i + size] for i in range(0, len(work), size)]
        from concurrent.futures import ProcessPoolExecutor  # only a pool's scans pay for it

        # The workers are forked from this process, trees it kept included: frozen, those
        # are never walked by a worker's collector (nor copied page by page as it marks them).
        gc.freeze()
        try:
            with ProcessPoolExecutor(
                max_workers=workers,
                initializer=_pool_worker_init,
                initargs=(
                    self.codes,
                    self.check_options,
                    self.options.per_file_ignores,
                    repo_facts,
                    self.hints,
                ),
            ) as pool:
                for batch_result in pool.map(_run_batch, batches):
                    results.extend(batch_result)
                    if self.progress:
                        self.progress(len(batch_result))
        finally:
            gc.unfreeze()
        return results

    def scan(self, paths: Iterable[str | Path]) -> ScanResult:
        with rare_collections():
            return self._scan(list(paths))

    def _scan(self, paths: list[str | Path]) -> ScanResult:
        parse_once.new_scan()
        # A missing path is an error record (exit 2); the other paths are still scanned.
        missing = [FileError(str(p), _unusable(p)) for p in paths if _unusable(p)]
        paths = [p for p in paths if not _unusable(p)]
        unlisted: list[tuple[str, str]] = []
        files = discover(paths, self.options.exclude, self.options.use_git, unlisted)
        missing += [FileError(folder, reason) for folder, reason in unlisted]
        jobs = self.jobs_for(files)
        self.jobs = {j.display: j for j in jobs}
        self._unread = _unread_inputs(paths, files, jobs)
        cache = self._open_cache(paths)
        fingerprint = _tree_fingerprint(jobs) if cache else None
        final = cache.final(fingerprint) if cache else None
        self.kept, self._final = None, None
        if final is not None and len(final) == 4:  # 3 items: from before plans were kept
            # Nothing changed since the last scan of this tree: reuse its whole outcome.
            results, self.exports, self.repo_facts, self.kept = final
            return self._collect(jobs, results, missing)
        self._outside_read: list[str] = []
        results: dict[str, FileResult] = {}
        todo = []
        for job in jobs:
            hit = cache.lookup(job.path, job) if cache else None
            if hit is not None:
                results[job.display] = hit
            else:
                todo.append((job, None))
        for r in self._execute(todo):
            results[r.path] = r
            if cache:
                cache.store(self.jobs[r.path].path, r.digest, r)
        if cache:
            cache.save()
        outside = outside_exports(jobs, results, paths, self._read_exports)
        self.exports = self._resolve_reexports(jobs, results, outside)
        self.repo_facts = self._repo_pass(jobs, results)
        if cache and fingerprint is not None:
            self._final = (cache, fingerprint, results)
        return self._collect(jobs, results, missing)

    def keep(self, findings: list[Finding]) -> None:
        """Store the command's outcome of this scan (the planned findings: planning builds
        repository facts, most of a warm run) with the scan's results; the next scan of an
        unchanged tree reuses both and offers the findings as `kept`."""
        if self._final is None:
            return
        cache, fingerprint, results = self._final
        self._final = None
        cache.store_final(
            fingerprint,
            self._outside_read,
            (results, self.exports, self.repo_facts, list(findings)),
        )
        cache.save()

    def pool_pass_starts(
        self, results: dict[str, FileResult], repository_facts: RepositoryFacts
    ) -> None:
        """The repository pass goes to the process pool now (this process only waits for it),
        with these merged facts: a pipeline may start work of its own here (the facts, on a
        thread)."""

    def _collect(
        self,
        jobs: list[_Job],
        results: dict[str, FileResult],
        missing: list[FileError],
    ) -> ScanResult:
        out = ScanResult(files_seen=len(jobs), errors=list(missing))
        out.skipped = list(getattr(self, "_unread", ()))
        for r in results.values():
            out.findings.extend(r.findings)
            if r.error:
                out.errors.append(FileError(r.path, r.error))
            if r.skipped:
                out.skipped.append(FileError(r.path, r.skipped))
                out.files_seen -= 1
            out.files_parsed += r.parsed
        out.sort()
        self._results = results
        return out

    def _open_cache(self, paths: Iterable[str | Path]) -> ResultCache | None:
        if not self.options.cache:
            return None
        folder = self.options.cache_dir or default_cache_folder([str(p) for p in paths])
        o = self.options
        key = (
            tuple(self.codes),
            o.cuda,
            tuple(sorted(o.per_file_ignores.items(), key=str)),
            o.intent,
            o.scripted_functions,
            KEYS_VERSION,  # the files' facts are cached under their keys
        )
        if o.evidence:  # issue 28: findings depend on the evidence file's contents
            from migrate.record.evidence import fingerprint

            key = (*key, fingerprint(o.evidence))
        return ResultCache(folder, key)

    def analyze(self, display: str, text: str) -> list[Finding]:
        """Findings for an in-memory version of a scanned file (apply's later rounds)."""
        if _WORKER_STATE.get("checks") is not self.checks:  # another Scanner ran in between
            _worker_init(self.codes, self.check_options, self.options.per_file_ignores, self.hints)
            _WORKER_STATE["checks"] = self.checks
        repo = RepoPass(None, self.repo_facts) if self.repo_facts else None
        return analyze_loaded(self.jobs[display], text, self.exports or None, repo=repo).findings

    def _repo_pass(self, jobs: list[_Job], results: dict[str, FileResult]) -> RepositoryFacts:
        """Checks whose findings depend on other files (`PythonCheck.rerun`) run again, alone,
        on the files they select, with the facts of the whole repository."""
        facts = RepositoryFacts.merge(
            (r.facts for r in results.values()), self._remembered(jobs, results)
        )
        if not facts:
            return facts
        todo = []
        for job in jobs:
            r = results.get(job.display)
            if not job.python or r is None or r.error:
                continue
            mine = FileFacts(r.facts) if r.parsed else None
            module = functools.partial(getattr, job, "module")
            codes = tuple(
                c.code for c in self.checks.python if c.rerun(facts, mine, r.remembered, module)
            )
            if codes:
                todo.append((job, self.exports or None, RepoPass(codes, None)))
        todo = [item for item in todo if not self._settled(item[0], item[2], facts, results)]
        rerun = {job.display: set(p.codes or ()) for job, _, p in todo}
        for new in self._execute(
            todo, facts, on_pool=lambda: self.pool_pass_starts(results, facts)
        ):
            old = results[new.path]
            if new.error:  # phase 1 skipped or reported this file; keep its verdict
                continue
            kept = [f for f in old.findings if f.rule not in rerun[new.path]]
            findings = sorted(kept + new.findings, key=lambda f: (f.line, f.column))
            results[new.path] = replace(old, findings=findings, parsed=True)
        return facts

    @staticmethod
    def _remembered(
        jobs: list[_Job], results: dict[str, FileResult]
    ) -> Iterator[tuple[str, set[str]]]:
        """(module, `remember` words) of each file the prefilter skipped."""
        for job in jobs:
            r = results.get(job.display)
            if job.python and r is not None and r.remembered and not r.parsed:
                yield job.module, r.remembered

    def _settled(self, job: _Job, repo: RepoPass, facts: RepositoryFacts, results: dict) -> bool:
        """Whether the checks to run again on this file can settle its findings from their
        phase-1 variants (PythonCheck.settle) instead: then they are replaced here."""
        old = results[job.display]
        settled: dict[str, list[Finding]] = {}
        for code in repo.codes or ():
            variants = old.variants.get(code)
            found = self.checks.python_check(code).settle(variants, facts) if variants else None
            if found is None:
                return False
            settled[code] = found
        kept = [f for f in old.findings if f.rule not in settled]
        new = [f for found in settled.values() for f in found]
        results[job.display] = replace(
            old, findings=sorted(kept + new, key=lambda f: (f.line, f.column))
        )
        return True

    def _read_exports(self, root: str, path: str, module: str, package: bool) -> ExportTable | None:
        """A module outside the scanned paths: its export table (None when unreadable)."""
        self._outside_read.append(path)
        try:
            text = read_source(path, self.options.max_file_size, os.path.realpath(root))
        except (OSError, Skipped, UnicodeDecodeError, SyntaxError, LookupError):
            return None
        return export_table(path, text, self.checks, module, package)

    def _resolve_reexports(
        self,
        jobs: list[_Job],
        results: dict[str, FileResult],
        outside: list[dict[str, str]] = (),  # type: ignore[assignment]
    ) -> dict[str, str]:
        """Second look at files importing torch names that another repo module re-exports."""
        by_display = {j.display: j for j in jobs if j.python}
        ran_with: dict[str, int] = {}
        resolved: dict[str, str] = {}
        for _ in range(5):
            tables = [*(r.exports for r in results.values()), *outside]
            resolved = close_exports(tables, self.checks.framework_apis)
            if not resolved:
                return resolved
            modules = {k.rsplit(".", 1)[0] for k in resolved}
            leaf_names = {m.rsplit(".", 1)[-1] for m in modules}
            todo = []
            for display, job in by_display.items():
                if ran_with.get(display) == len(resolved):
                    continue
                r = results.get(display)
                if r is not None and r.parsed:
                    if not any(imports_module(i, modules) for i in r.repo_imports):
                        continue
                elif r is not None and r.error:
                    continue
                elif r is None or not (leaf_names & r.import_words):
                    continue
                todo.append((job, resolved))
                ran_with[display] = len(resolved)
            if not todo:
                return resolved
            for r in self._execute(todo):
                results[r.path] = r
        return resolved


def _tree_fingerprint(jobs: list[_Job]) -> tuple:
    """Which files, with which stat (cache.stat_key): equal fingerprints mean an unchanged
    tree."""
    stats = []
    for job in jobs:
        try:
            st = os.stat(job.path)
        except OSError:
            stats.append((job.path, -1, -1, -1, -1))
            continue
        stats.append((job.path, *stat_key(st)))
    return tuple(stats)


def _unusable(path: str | Path) -> str | None:
    """Why a path named on the command line cannot be scanned (missing, a symlink loop, a
    dangling link), or None."""
    if not os.path.lexists(path):
        return "no such file or directory"
    try:
        os.stat(path)
    except OSError as exc:
        return exc.strerror.lower() if exc.strerror else str(exc)
    return None


def _unread_inputs(
    paths: list[str | Path], files: list[SourceFile], jobs: list[_Job]
) -> list[FileError]:
    """Paths named on the command line that give nothing to read: a file of a type no rule
    reads (a file only the selected rules skip is not one), a folder without any file to
    read. One note each (issue 30)."""
    notes = []
    read = functools.cache(lambda: {os.path.normpath(j.path) for j in jobs})
    for given in paths:
        key = os.path.normpath(given)
        if os.path.isdir(given):
            under = "" if key == "." else key.rstrip(os.sep) + os.sep
            if not any(j.path.startswith(under) for j in jobs) and not any(
                f.display.startswith(under) and _some_rule_reads(f.path) for f in files
            ):
                notes.append(FileError(str(given), "no file in this folder that migrate reads"))
        elif key not in read() and not _some_rule_reads(Path(key)):
            if any(os.path.normpath(f.path) == key for f in files):  # not --exclude'd
                notes.append(FileError(str(given), "not a file type migrate reads"))
    return notes


def _some_rule_reads(path: Path) -> bool:
    if path.suffix in (".py", ".pyi"):
        return True
    return bool(_every_check().text_checks_for(PurePosixPath(path.as_posix())))


@functools.lru_cache(maxsize=1)
def _every_check() -> CheckSet:
    return CheckSet(sorted(all_rules()), {"cuda": "13.0"})


def scan(paths: Iterable[str | Path], options: ScanOptions | None = None) -> ScanResult:
    return Scanner(options or ScanOptions()).scan(paths)


def rules_by_code() -> dict[str, Rule]:
    return all_rules()


def check_source(
    text: str, codes: Iterable[str], path: str = "example.py", options: dict | None = None
) -> list[Finding]:
    """Findings for one in-memory file (fixture tests, editors): same checks as a scan."""
    checks = CheckSet(codes, options or {"cuda": "13.0"})
    if path.endswith((".py", ".pyi")):
        result = analyze_python(path, text, checks, module=Path(path).stem)
        if result.error is None:
            text_checks = checks.text_checks_for(PurePosixPath(path))
            result.findings += analyze_text_file(path, text, text_checks).findings
    else:
        result = analyze_text_file(path, text, checks.text_checks_for(PurePosixPath(path)))
    if result.error:
        raise SyntaxError(f"{path}: {result.error}")
    _suppress(result, text, {})
    return sorted(result.findings, key=lambda f: (f.line, f.column, f.rule))
