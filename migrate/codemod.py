"""`migrate apply` as a LibCST codemod command, for LibCST's own command line:

    python -m libcst.tool initialize .          # writes .libcst.codemod.yaml; list `migrate`
                                                # under its `modules`
    python -m libcst.tool codemod codemod.TorchScriptToExport --no-format [--intent drop]
        [--unsafe-fixes] PATH

The migration is planned for the whole repository (a loader moves with every writer of its
file, a wrapper with its calls), so the plan is computed once per repository root and run,
before any file is written, by whichever of LibCST's worker processes asks first; each file
is then handed the text `migrate apply` would write, parsed into the `cst.Module` LibCST
writes back. The rewrites themselves stay text edits on `ast` positions, as in
`migrate apply`; a file the plan leaves unchanged is skipped (SkipFile). docs/codemod.md
says what differs from `migrate apply` (LibCST visits Python files only).
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import hashlib
import json
import multiprocessing
import os
from collections.abc import Iterator
from pathlib import Path

import libcst as cst
from libcst.codemod import CodemodCommand, CodemodContext, SkipFile

#: LibCST's configuration file; its `repo_root` names the repository the plan covers.
LIBCST_CONFIG = ".libcst.codemod.yaml"
PLAN_PREFIX = "codemod-plan-"


class TorchScriptToExport(CodemodCommand):
    DESCRIPTION = (
        "Move TorchScript to torch.export / ExecuTorch: the edits `migrate apply` writes, "
        "planned for the whole repository (LibCST's repo_root, else the current folder)."
    )

    @staticmethod
    def add_args(arg_parser: argparse.ArgumentParser) -> None:
        arg_parser.add_argument(
            "--intent",
            choices=("drop", "keep-scriptable"),
            default=None,
            help="As `migrate apply --intent` (default: [tool.migrate] intent, else none: "
            "each site is decided alone).",
        )
        arg_parser.add_argument(
            "--unsafe-fixes",
            action=argparse.BooleanOptionalAction,
            default=None,
            help="As `migrate apply --unsafe-fixes` (default: [tool.migrate] unsafe-fixes).",
        )
        arg_parser.add_argument(
            "--isolated",
            action="store_true",
            default=False,
            help="As `migrate apply --isolated`: ignore pyproject.toml configuration.",
        )

    def __init__(
        self,
        context: CodemodContext,
        intent: str | None = None,
        unsafe_fixes: bool | None = None,
        isolated: bool = False,
    ) -> None:
        super().__init__(context)
        self.settings = {"intent": intent, "unsafe_fixes": unsafe_fixes, "isolated": isolated}

    def transform_module_impl(self, tree: cst.Module) -> cst.Module:
        filename = self.context.filename
        if filename is None:
            why = "the plan needs the repository: give paths, not stdin"
            self.warn(why)  # LibCST's stdin mode prints warnings, not a skip's reason
            raise SkipFile(why)
        path = os.path.realpath(filename)
        root = repository_root()
        if not _inside(path, root):
            raise SkipFile(f"outside the repository the plan covers ({root})")
        found, computed_here = shared_plan(root, self.settings)
        if computed_here and found["others"] and not _WARNED:
            # One process computes the plan: the note is printed once per run.
            _WARNED.append(root)
            self.warn(others_note(found["others"], root, self.settings))
        entry = found["files"].get(path)
        if entry is None:
            raise SkipFile("nothing to change")
        if "error" in entry:
            raise SkipFile(entry["error"])
        if hashlib.blake2b(tree.bytes).hexdigest() != entry["digest"]:
            raise SkipFile("changed since it was planned; left untouched")
        return cst.parse_module(base64.b64decode(entry["fixed"]))


def repository_root() -> str:
    """LibCST's repository root: `repo_root` of the closest .libcst.codemod.yaml above the
    current folder (relative to that file), else the current folder."""
    import yaml

    here = Path.cwd().resolve()
    for folder in (here, *here.parents):
        config = folder / LIBCST_CONFIG
        if config.is_file():
            data = yaml.safe_load(config.read_text(encoding="utf-8")) or {}
            root = data.get("repo_root", ".") if isinstance(data, dict) else "."
            return os.path.realpath(folder / str(root))
    return str(here)


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def plan(root: str, settings: dict) -> dict:
    """What `migrate apply ROOT --allow-dirty` with these settings would write, as JSON:
    {"files": {real path: {"digest", "fixed" (base64 bytes)} or {"error"}}, "others": {path
    relative to root: [rule codes]}}, the others being changed files LibCST does not visit
    (requirements, Dockerfiles, CI files: what is not Python)."""
    from migrate.cli.scan_command import build_options
    from migrate.fix.source_text import decode, encode
    from migrate.pipeline.apply import run_apply

    options, config = build_options(
        [root], isolated=settings["isolated"], intent=settings["intent"]
    )
    unsafe = settings["unsafe_fixes"]
    result = run_apply(
        [root],
        options,
        dry_run=True,
        unsafe_fixes=config.unsafe_fixes if unsafe is None else unsafe,
    )
    files: dict[str, dict[str, str]] = {}
    others: dict[str, list[str]] = {}
    for fix in result.fixes:
        path = os.path.realpath(fix.path)
        if not path.endswith(".py"):
            if fix.changed:
                others[os.path.relpath(path, root)] = sorted({f.rule for f in fix.applied})
            continue
        if fix.error is not None:
            files[path] = {"error": fix.error}
        elif fix.changed:
            raw = Path(path).read_bytes()
            fixed = encode(decode(raw), fix.fixed)
            files[path] = {
                "digest": hashlib.blake2b(raw).hexdigest(),
                "fixed": base64.b64encode(fixed).decode("ascii"),
            }
    return {"files": files, "others": others}


def others_note(others: dict[str, list[str]], root: str, settings: dict) -> str:
    """The files of the plan LibCST does not visit, and the `migrate apply` that writes them."""
    codes = sorted({code for found in others.values() for code in found})
    flags = [f"--intent {settings['intent']}"] if settings["intent"] else []
    flags += ["--isolated"] if settings["isolated"] else []
    if settings["unsafe_fixes"] is not None:
        flags.append("--unsafe-fixes" if settings["unsafe_fixes"] else "--no-unsafe-fixes")
    command = " ".join(["migrate apply --select", ",".join(codes), *flags, root])
    return (
        f"the plan also changes {len(others)} file(s) LibCST does not visit "
        f"({', '.join(sorted(others))}); `{command}` writes them"
    )


def _run_id() -> int:
    """The LibCST run this process works for: its own pid, or its parent's in a worker."""
    parent = multiprocessing.parent_process()
    return parent.pid if parent is not None and parent.pid is not None else os.getpid()


_PLANS: dict[str, tuple[dict, bool]] = {}
_WARNED: list[str] = []


def shared_plan(root: str, settings: dict) -> tuple[dict, bool]:
    """The plan of this run for `root` and whether this process computed it. It is computed
    once: the first process to ask computes it under a lock (so before any worker writes a
    file) and leaves it in the cache folder of the root for the run's other workers."""
    from migrate.scan.cache import default_cache_folder

    key = json.dumps({"root": root, "run": _run_id(), **settings}, sort_keys=True)
    if key in _PLANS:
        return _PLANS[key]
    folder = default_cache_folder([root])
    folder.mkdir(parents=True, exist_ok=True)
    name = hashlib.blake2b(key.encode(), digest_size=8).hexdigest()
    stored = folder / f"{PLAN_PREFIX}{_run_id()}-{name}.json"
    with _locked(folder / f"{PLAN_PREFIX}{_run_id()}.lock"):
        if stored.is_file():
            _PLANS[key] = (json.loads(stored.read_text(encoding="utf-8")), False)
        else:
            _remove_finished_runs(folder)
            found = plan(root, settings)
            tmp = stored.with_suffix(".tmp")
            tmp.write_text(json.dumps(found), encoding="utf-8")
            os.replace(tmp, stored)
            _PLANS[key] = (found, True)
    return _PLANS[key]


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    import fcntl

    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _remove_finished_runs(folder: Path) -> None:
    """Plans and locks of runs whose process has exited."""
    for path in folder.glob(f"{PLAN_PREFIX}*"):
        pid = path.name[len(PLAN_PREFIX) :].split("-")[0].split(".")[0]
        if pid.isdigit() and not _alive(int(pid)):
            with contextlib.suppress(OSError):
                path.unlink()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
