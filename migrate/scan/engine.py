"""The scan pipeline: discover -> prefilter -> parse once (ast) -> resolve names -> checks.

Phase 1 analyses every file whose text can hold a finding. Names that a file imports from
another module of the same repository are resolved afterwards: files that import a
re-exported torch.jit name are analysed again with the repository's export table (rare).
What is done to each file is `workers`, here or in a process pool; one file's analysis is
`file_analysis`; the repository pass (checks judging files again with the whole repository's
facts) is `repository_pass`.
"""

from __future__ import annotations

import ast
import functools
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from migrate.analysis import parsed as parse_once
from migrate.analysis.pyscope import ScopeTable
from migrate.analysis.repository_facts import KEYS_VERSION, NO_FACTS, RepositoryFacts
from migrate.findings import FileError, Finding, ScanResult
from migrate.registry import Rule, all_rules, select_codes
from migrate.scan.cache import ResultCache, default_cache_folder, stat_key
from migrate.scan.checkset import CheckSet
from migrate.scan.discover import (
    DEFAULT_MAX_FILE_SIZE,
    Skipped,
    SourceFile,
    discover,
    read_source,
)
from migrate.scan.file_analysis import FileResult
from migrate.scan.reexports import (
    ExportTable,
    close_exports,
    export_table,
    imports_module,
    outside_exports,
)
from migrate.scan.repository_pass import Changed, PassInputs, merged_facts, pass_over_span
from migrate.scan.workers import (
    WORKER_STATE,
    FileJob,
    RepoPass,
    analyze_loaded,
    pool_worker_init,
    rare_collections,
    run_batch,
    run_job,
    size_balanced_batches,
    worker_init,
)

if TYPE_CHECKING:  # a pool's module is imported only by a scan that starts one
    from concurrent.futures import Executor

PARALLEL_THRESHOLD = 48  # below this many parsed files a process pool costs more than it saves
# Source bytes a scan parses in its own process before a pool may take the rest, and the
# parse volume still to come that makes it take them: most repositories parse less and stay
# in one process. A file a worker parsed is parsed again here only where a later stage reads
# its tree (the planner's facts: a few dozen files on torch + executorch). Measured at -j 2
# (docs/performance.md, "Scan speed"): on the development corpus and on installed torch +
# executorch a pool of n after 256 kB was as fast as 469f4b5's pool from the first file, and
# faster than this process sharing the work with n - 1 workers beside it (its share of
# unpickling their results, and its growing heap, cost more than the trees it kept saved).
POOL_AFTER_BYTES = 256_000


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


# --------------------------------------------------------------------------- the pipeline


class Scanner:
    """The scan stage alone: findings as the checks report them. A command's pipeline
    (migrate.pipeline.scan) builds the facts and plans; it gives the per-file `hints` and
    may work beside the repository pass (`repository_pass_starts`), and `keep`s its outcome."""

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
        worker_init(self.codes, self.check_options, options.per_file_ignores, self.hints)
        self.checks: CheckSet = WORKER_STATE["checks"]  # type: ignore[assignment]
        self.progress = progress
        self.repo_facts = NO_FACTS
        self.kept: list[Finding] | None = None  # what `keep` stored, for an unchanged tree
        self._final: tuple | None = None  # where `keep` stores it

    def jobs_for(self, files: list[SourceFile]) -> list[FileJob]:
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
            jobs.append(FileJob(str(f.path), f.display, str(f.root), python, confine, limit))
        return jobs

    def _workers(self, count: int) -> int:
        """How many processes run `count` jobs (1: this one)."""
        workers = self.options.jobs or os.cpu_count() or 1
        return 1 if workers <= 1 or count < PARALLEL_THRESHOLD else workers

    def _execute(
        self,
        work: list[tuple],
        repo_facts: RepositoryFacts | None = None,
        busy: bool = False,
    ) -> list[FileResult]:
        """Run the jobs here or in a process pool; `repo_facts`: what a RepoPass without
        facts of its own reads (megabytes on a large tree: sent to each process once).
        `busy`: this process has work of its own meanwhile (on a thread): the pool takes
        every job at once, with a core left to that work."""
        workers = self._workers(len(work))
        WORKER_STATE["repo_facts"] = repo_facts
        if busy and workers > 1:
            return self._in_pool(work, workers - 1, repo_facts)
        results: list[FileResult] = []
        # The jobs start here; a pool takes the rest only once this process has parsed enough
        # to show it pays: most files of a repository are never parsed, and on a tree that
        # parses little the pool's start, and the later stages parsing again what its
        # workers parsed (their trees stay there), cost more than it saves.
        start = parse_once.parsed_bytes()
        check = POOL_AFTER_BYTES  # parsed bytes at which the pool is considered next
        sizes: list[int] | None = None
        for item in work:
            parsed = parse_once.parsed_bytes() - start
            if workers > 1 and parsed >= check and len(work) - len(results) >= PARALLEL_THRESHOLD:
                sizes = sizes or [_size(job) for job, *_ in work]
                if _parse_to_come(sizes, len(results), parsed) >= POOL_AFTER_BYTES:
                    break
                check = parsed + POOL_AFTER_BYTES
            results.append(run_job(*item))
            if self.progress:
                self.progress(1)
        else:
            return results
        done = len(results)
        rest = sizes[done:] if sizes else None
        results.extend(self._in_pool(work[done:], workers, repo_facts, rest))
        return results

    def _in_pool(
        self,
        work: list[tuple],
        workers: int,
        repo_facts: RepositoryFacts | None,
        sizes: list[int] | None = None,
    ) -> list[FileResult]:
        """Run the jobs in a pool of `workers` processes (this process waits); results in the
        jobs' order. The largest files go first, each alone or in a small batch, and the
        smallest last, many to a batch: a large file met last kept one worker busy alone
        (a 470 kB test module, over a second, on torch + executorch)."""
        self._pool_ran = True
        if sizes is None:
            sizes = [_size(job) for job, *_ in work]
        batches = size_balanced_batches(sizes, workers)
        results: list[FileResult | None] = [None] * len(work)
        with self._pool(workers, repo_facts) as pool:
            for indices, batch_result in zip(
                batches, pool.map(run_batch, [[work[i] for i in b] for b in batches]), strict=True
            ):
                for i, result in zip(indices, batch_result, strict=True):
                    results[i] = result
                if self.progress:
                    self.progress(len(batch_result))
        return results  # type: ignore[return-value]

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
        self._pool_ran = False
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

    def repository_pass_starts(
        self, results: dict[str, FileResult], repository_facts: RepositoryFacts
    ) -> bool:
        """The repository pass may go to a process pool, with these merged facts: a pipeline
        may start work of its own here (the planner's facts, on a thread) and says whether it
        did (this process then leaves the pass to the pool)."""
        return False

    def work_beside_pass(self, results: dict[str, FileResult]) -> bool:
        """Whether `repository_pass_starts` will start work with these phase-1 results: the
        pass's pool then leaves a core to it."""
        return False

    def _collect(
        self,
        jobs: list[FileJob],
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
        if WORKER_STATE.get("checks") is not self.checks:  # another Scanner ran in between
            worker_init(self.codes, self.check_options, self.options.per_file_ignores, self.hints)
            WORKER_STATE["checks"] = self.checks
        repo = RepoPass(None, self.repo_facts) if self.repo_facts else None
        return analyze_loaded(self.jobs[display], text, self.exports or None, repo=repo).findings

    def _repo_pass(self, jobs: list[FileJob], results: dict[str, FileResult]) -> RepositoryFacts:
        """Checks whose findings depend on other files (`PythonCheck.rerun`) judge again, alone,
        the files they select, with the facts of the whole repository (scan.repository_pass).
        In a scan whose phase 1 needed a pool, the pass's pool workers pick the files too."""
        facts = merged_facts(jobs, results)
        if not facts:
            return facts
        inputs = PassInputs(jobs, results, facts, self.checks, self.exports or None)
        if self._pool_ran and self._workers(len(jobs)) > 1 and inputs.askers:
            inputs.prepare()
            for display, findings, parsed in self._pass_in_pool(inputs):
                results[display] = replace(results[display], findings=findings, parsed=parsed)
            return facts
        todo = []
        for job in jobs:
            codes = inputs.codes_for(job)
            if codes and not self._settled(inputs, job, codes):
                todo.append((job, inputs.exports, RepoPass(codes, None)))
        busy = self._workers(len(todo)) > 1 and self.repository_pass_starts(results, facts)
        for (job, _, repo), new in zip(todo, self._execute(todo, facts, busy=busy), strict=True):
            results[job.display] = inputs.analysed_again(job, repo.codes or (), new)
        return facts

    def _settled(self, inputs: PassInputs, job: FileJob, codes: tuple[str, ...]) -> bool:
        """Whether the checks to run again on this file settle its findings from their phase-1
        variants (PythonCheck.settle) instead: then they are replaced here."""
        result = inputs.settled(job, codes)
        if result is not None:
            inputs.results[job.display] = result
        return result is not None

    def _pool(
        self, workers: int, repo_facts: RepositoryFacts | None, inputs: PassInputs | None = None
    ) -> Executor:
        """A pool of `workers` processes forked from this one, trees it kept included: frozen,
        those are never walked by a worker's collector (nor copied page by page as it marks
        them). `inputs`: a repository pass's, for its workers."""
        from concurrent.futures import ProcessPoolExecutor  # only a pool's scans pay for it

        parse_once.freeze()
        return ProcessPoolExecutor(
            max_workers=workers,
            initializer=pool_worker_init,
            initargs=(
                self.codes,
                self.check_options,
                self.options.per_file_ignores,
                repo_facts,
                self.hints,
                inputs,
                # The trees its workers hold together: what this process would keep.
                parse_once.KEEP_BYTES // workers,
            ),
        )

    def _pass_in_pool(self, inputs: PassInputs) -> Iterator[Changed]:
        """The pass in a pool forked now, with phase 1's results in it: each worker picks,
        settles and analyses again the files of its spans of jobs. The pipeline's own work
        beside it (`repository_pass_starts`) starts once the workers are forked, with a core of
        its own: it was the last to finish, sharing two cores with two workers."""
        workers = self._workers(len(inputs.jobs))
        if self.work_beside_pass(inputs.results):
            workers = max(1, workers - 1)
        size = max(16, len(inputs.jobs) // (workers * 16))
        spans = [(i, min(i + size, len(inputs.jobs))) for i in range(0, len(inputs.jobs), size)]
        with self._pool(workers, inputs.facts, inputs) as pool:
            changed = pool.map(pass_over_span, spans)
            self.repository_pass_starts(inputs.results, inputs.facts)
            for span_changed in changed:
                yield from span_changed
                if self.progress:
                    self.progress(len(span_changed))

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
        jobs: list[FileJob],
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


def _tree_fingerprint(jobs: list[FileJob]) -> tuple:
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
    paths: list[str | Path], files: list[SourceFile], jobs: list[FileJob]
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


def _parse_to_come(sizes: list[int], done: int, parsed: int) -> float:
    """The source bytes the jobs after the first `done` will likely parse: their files' sizes
    times the share of the bytes read so far that was parsed (most files are never parsed)."""
    read = sum(sizes[:done])
    return sum(sizes[done:]) * parsed / read if read else 0.0


def _size(job) -> int:
    try:
        return os.path.getsize(job.path)
    except (OSError, AttributeError):
        return 0
