"""The archives a batch converts or verifies, each a `Job` with its settings: every ``*.pt``
under a folder with the command line's settings, or a manifest's rows (JSON lines or CSV),
each row's settings over the command line's.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from migrate.verify.errors import VerifyError, describe
from migrate.verify.options import check_options

#: Per-archive settings a manifest may give, and the command-line settings they override.
SETTING_KEYS = (
    "inputs",
    "input_shapes",
    "dynamic_dims",
    "rtol",
    "atol",
    "device",
    "method",
    "samples",
    "seed",
    "backend",
    "trust",
    "max_input_bytes",
)
_MANIFEST_KEYS = {"archive", "timeout", "devices", *SETTING_KEYS}


@dataclass
class Job:
    """One archive to convert or verify, with its settings after the manifest's overrides."""

    archive: str  # absolute path
    mode: str  # convert | verify
    out: str  # folder for its artifacts
    settings: dict[str, Any]
    timeout: float | None = None
    digest: str = ""
    root: str = ""  # the batch's --out: every artifact stays inside it

    @property
    def settings_digest(self) -> str:
        text = json.dumps({"mode": self.mode, **self.settings}, sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    @property
    def gpus(self) -> int:
        """GPUs the job needs: one when it checks a CUDA device."""
        return int(str(self.settings.get("device") or "").startswith("cuda"))

    def to_json(self) -> dict[str, Any]:
        return {
            "archive": self.archive,
            "mode": self.mode,
            "out": self.out,
            "settings": self.settings,
            "timeout": self.timeout,
            "digest": self.digest,
            "root": self.root,
        }

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> Job:
        return cls(**doc)


def sha256_file(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def archives_under(root: Path) -> list[Path]:
    """Every ``*.pt`` file under ``root``, in a stable order."""
    return sorted(p for p in root.rglob("*.pt") if p.is_file())


def _text(raw: dict[str, Any], key: str, where: str, what: str = "a string") -> str | None:
    value = raw.get(key)
    if value is None or value == "":
        return None
    if not isinstance(value, str) or "\0" in value:
        raise VerifyError("usage", f"{where}: `{key}` must be {what}, not {_shown(value)}")
    return value


def _split_list(raw: dict[str, Any], key: str, where: str) -> list[str]:
    value = raw.get(key)
    if value is None or value == "":
        return []
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    if isinstance(value, str):
        return [v for v in value.replace(";", " ").split() if v]
    raise VerifyError(
        "usage",
        f"{where}: `{key}` must be a list of strings or one string, not {_shown(value)}",
    )


def _shown(value: Any) -> str:
    text = json.dumps(value)
    return text if len(text) <= 40 else text[:39] + "…"


def _number(value: Any, key: str, where: str, kind: type = float) -> Any:
    if value is None or value == "":
        return None
    try:
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise TypeError
        if not math.isfinite(float(value)):
            raise VerifyError("usage", f"{where}: `{key}` must be a finite number, not {value!r}")
        out = kind(value)
    except (TypeError, ValueError):
        raise VerifyError(
            "usage", f"{where}: `{key}` must be a number, not {_shown(value)}"
        ) from None
    if out < 0:
        raise VerifyError("usage", f"{where}: `{key}` must be >= 0, not {value!r}")
    return out


def _entry(raw: dict[str, Any], base: Path, where: str) -> dict[str, Any]:
    """A manifest row as ``{archive, timeout, devices, <setting>: value}``, paths resolved.
    A row may ask for the audit (`trust: false`) but never skip it: only the command line's
    --trust-archive does, like any setting that would run what a file carries."""
    unknown = sorted(k for k in raw if k not in _MANIFEST_KEYS and raw[k] not in (None, ""))
    if unknown:
        raise VerifyError(
            "usage",
            f"{where}: unknown key {', '.join(unknown)} (known: {', '.join(sorted(_MANIFEST_KEYS))})",
        )
    archive = _text(raw, "archive", where, "a path (a string)")
    if not archive:
        raise VerifyError("usage", f"{where}: no `archive` path")
    entry: dict[str, Any] = {"archive": str((base / archive).resolve())}
    inputs = _text(raw, "inputs", where, "a path (a string)")
    if inputs:
        entry["inputs"] = str((base / inputs).resolve())
    for key in ("input_shapes", "dynamic_dims"):
        if raw.get(key):
            entry[key] = _split_list(raw, key, where)
    for key in ("rtol", "atol", "timeout"):
        value = _number(raw.get(key), key, where)
        if value is not None:
            entry[key] = value
    for key in ("samples", "seed", "max_input_bytes"):
        value = _number(raw.get(key), key, where, int)
        if value is not None:
            entry[key] = value
    for key in ("method", "backend", "device"):
        value = _text(raw, key, where)
        if value:
            entry[key] = value
    if raw.get("devices"):
        entry["devices"] = _split_list(raw, "devices", where)
    if raw.get("trust") not in (None, ""):
        if str(raw["trust"]).lower() in ("1", "true", "yes"):
            sys.stderr.write(
                f"warning: {where}: `trust` ignored: only --trust-archive on the command line "
                "loads an archive without its audit\n"
            )
        else:
            entry["trust"] = False
    try:  # as the command line's, before any worker imports torch
        for device in entry.get("devices") or [entry.get("device")]:
            check_options(
                input_shapes=entry.get("input_shapes", ()),
                dynamic_dims=entry.get("dynamic_dims", ()),
                device=device,
                method=entry.get("method"),
                backend=entry.get("backend"),
            )
    except VerifyError as exc:
        raise VerifyError("usage", f"{where}: {exc.message}") from None
    return entry


def read_manifest(path: Path) -> list[dict[str, Any]]:
    """JSON lines (one object per line) or CSV with a header row; paths are relative to the
    manifest's folder. A bad row is a usage error naming the file and the line."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise VerifyError("usage", f"--manifest {path}: cannot read: {describe(exc)}") from None
    base = path.parent
    rows: list[tuple[int, dict[str, Any]]] = []
    if path.suffix.lower() == ".csv":
        for i, row in enumerate(csv.DictReader(io.StringIO(text)), start=2):
            rows.append((i, {k.strip(): (v or "").strip() for k, v in row.items() if k}))
    else:
        for i, line in enumerate(text.splitlines(), start=1):
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            try:
                doc = json.loads(line)
            except json.JSONDecodeError as exc:
                raise VerifyError(
                    "usage", f"{path}:{i}: not a JSON object ({exc.msg}); use JSON lines or .csv"
                ) from None
            if not isinstance(doc, dict):
                raise VerifyError("usage", f"{path}:{i}: expected a JSON object per line")
            rows.append((i, doc))
    entries = [_entry(raw, base, f"{path}:{i}") for i, raw in rows]
    if not entries:
        raise VerifyError("usage", f"--manifest {path}: no archives listed")
    return entries


def _artifact_dir(archive: Path, root: Path | None, out: Path, mode: str) -> Path:
    """Artifacts mirror the registry's layout under ``out`` (verify: a folder per archive)."""
    try:
        rel = archive.relative_to(root) if root else Path(archive.name)
    except ValueError:  # a manifest entry outside the manifest's folder
        rel = Path("_external") / sha256_file(archive)[:12] / archive.name
    where = out / rel.parent
    return where / archive.stem if mode == "verify" else where


def build_jobs(
    mode: str,
    target: str | None,
    manifest: Path | None,
    out: Path,
    settings: dict[str, Any],
    timeout: float | None,
) -> list[Job]:
    """The jobs of a folder (every ``*.pt`` with the command line's settings) or a manifest
    (each row's settings over the command line's)."""
    if manifest is not None:
        entries = read_manifest(manifest)
        root: Path | None = manifest.parent.resolve()
    else:
        assert target is not None
        root = Path(target).resolve()
        entries = [{"archive": str(p)} for p in archives_under(root)]
        if not entries:
            raise VerifyError("usage", f"{target}: no *.pt archives under it")
    jobs = []
    for entry in entries:
        job_settings = dict(settings)
        job_settings.update({k: v for k, v in entry.items() if k in SETTING_KEYS})
        if job_settings.get("inputs"):
            job_settings["input_shapes"] = entry.get("input_shapes", [])
        elif entry.get("input_shapes"):
            job_settings["inputs"] = None
        archive = Path(entry["archive"])
        devices = entry.get("devices") or [job_settings.get("device")]
        where = _artifact_dir(archive, root, out, mode)
        for device in devices:
            s = dict(job_settings, device=device)
            if len(devices) > 1:  # one report folder per device
                where_d = where.with_name(f"{where.name}@{str(device).replace(':', '-')}")
            else:
                where_d = where
            jobs.append(
                Job(
                    archive=str(archive),
                    mode=mode,
                    out=str(where_d),
                    settings=s,
                    timeout=entry.get("timeout", timeout),
                    root=str(out),
                )
            )
    return jobs
