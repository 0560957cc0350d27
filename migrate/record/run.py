"""Run the recorded command: the recorder rides on PYTHONPATH into every Python process."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from migrate.record.boot import _migrate_recorder as recorder
from migrate.record.merge import merge_run, read_evidence
from migrate.safe_write import check_output

BOOT = Path(__file__).resolve().parent / "boot"


def recorder_env(parts: Path, root: Path, base: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ if base is None else base)
    old = env.get("PYTHONPATH")
    env["PYTHONPATH"] = str(BOOT) + (os.pathsep + old if old else "")
    env[recorder.PARTS_ENV] = str(parts)
    env[recorder.ROOT_ENV] = str(root.resolve())
    return env


def record(command: list[str], evidence: Path, root: Path, confine: Path | None = None) -> int:
    """Run `command` (exactly as typed, in this folder, with this terminal) and merge what its
    processes recorded into `evidence`, which must stay inside `confine` when given (the
    default `.migrate/evidence.json` stays in the folder the command runs in). Answers the
    command's exit code."""
    if not command:
        raise ValueError(
            "migrate record: no command after `--` (e.g. `migrate record -- pytest -q`)"
        )
    # Before the command runs: a `.migrate` that is a symlink (a checkout can ship one) is
    # never written through, and its evidence never read.
    check_output(evidence, confine)
    if evidence.exists():
        read_evidence(evidence)  # a damaged file stops the run before the command starts
    parts = Path(tempfile.mkdtemp(prefix="migrate-record-"))
    try:
        try:
            process = subprocess.Popen(command, env=recorder_env(parts, root))
        except OSError as exc:
            raise ValueError(
                f"migrate record: cannot run `{command[0]}`: {exc.strerror or exc}"
            ) from None
        while True:
            try:
                code = process.wait()
                break
            except KeyboardInterrupt:  # the command got the same Ctrl-C; let it finish
                continue
        exit_code = code if code >= 0 else 128 - code  # killed by a signal: the shell's code
        merge_run(evidence, parts, exit_code, confine)
        return exit_code
    finally:
        shutil.rmtree(parts, ignore_errors=True)
