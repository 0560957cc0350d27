"""An archive's zip, checked the way torch's reader reads it before any entry is read:
entry names compared without case (two of one name are refused: torch would load the first,
a reader the last), and declared sizes that could exhaust memory refused (over the limits,
past the end of the file, zip bombs). No torch import.
"""

from __future__ import annotations

import os
import re
import zipfile
from pathlib import Path


class ArchiveUnreadable(Exception):
    """The archive's code cannot be read or parsed, so it cannot be audited."""


MiB = 1 << 20
#: Largest entry outside ``data/`` (code, pickles, debug info, configuration): read whole.
MAX_CODE_BYTES = 64 * MiB
#: Default for all ``data/`` entries together (tensor bytes); ``MIGRATE_MAX_ARCHIVE_BYTES``.
DEFAULT_MAX_DATA_BYTES = 16 << 30
#: An entry over 1 MiB may expand at most this many times (torch stores data uncompressed
#: and deflates code about 5 times; a zip bomb of zeros expands about 1000 times).
MAX_RATIO = 100
MAX_ENTRIES = 100_000
DATA_LIMIT_ENV = "MIGRATE_MAX_ARCHIVE_BYTES"


def max_data_bytes() -> int:
    """The ``data/`` total allowed: ``MIGRATE_MAX_ARCHIVE_BYTES`` (bytes, or with K/M/G)."""
    raw = os.environ.get(DATA_LIMIT_ENV, "").strip()
    if not raw:
        return DEFAULT_MAX_DATA_BYTES
    m = re.fullmatch(r"(\d+)\s*([kKmMgGtT]?)i?[bB]?", raw)
    if not m:
        raise ArchiveUnreadable(f"{DATA_LIMIT_ENV}={raw!r}: expected a size such as 32G")
    return int(m.group(1)) << (10 * " KMGT".index(m.group(2).upper() or " "))


def _is_data(name: str) -> bool:
    """A tensor payload: ``<archive>/data/...`` (not ``data.pkl``, not ``code/data/x.py``)."""
    parts = name.lower().split("/")
    return (len(parts) > 2 and parts[1] == "data") or (len(parts) > 1 and parts[0] == "data")


def checked_entries(path: Path, zf: zipfile.ZipFile, size: int | None = None) -> list:
    """The entries of ``zf``, refused before any is read when torch and an audit would read
    them differently (two entries of one name) or when reading them could exhaust memory
    (declared sizes over the limits, sizes that do not fit the file, zip bombs)."""
    infos = zf.infolist()
    if len(infos) > MAX_ENTRIES:
        raise ArchiveUnreadable(f"{path}: refusing to read: {len(infos)} entries")
    size = path.stat().st_size if size is None else size
    seen: dict[str, str] = {}
    data_total, data_limit = 0, max_data_bytes()
    for info in infos:
        name = info.filename
        key = name.lower()  # torch's zip reader looks names up without case
        if key in seen:
            raise ArchiveUnreadable(
                f"{path}: refusing to read: two entries named {name!r}"
                + (f" and {seen[key]!r}" if seen[key] != name else "")
                + " (torch would load the first, a reader the last)"
            )
        seen[key] = name
        why = None
        if info.flag_bits & 0x1:
            why = "is encrypted"
        elif info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            why = f"uses compression method {info.compress_type} (torch reads stored or deflated)"
        elif info.header_offset + info.compress_size > size:
            why = f"declares {info.compress_size} bytes past the end of the file"
        elif info.compress_type == zipfile.ZIP_STORED and info.compress_size != info.file_size:
            why = f"is stored but declares {info.file_size} bytes in {info.compress_size}"
        elif info.file_size > MiB and info.file_size > MAX_RATIO * max(info.compress_size, 1):
            why = (
                f"expands {info.compress_size} bytes to {info.file_size} "
                f"(over {MAX_RATIO} times: a zip bomb)"
            )
        elif not _is_data(name) and info.file_size > MAX_CODE_BYTES:
            why = f"declares {info.file_size} bytes (over the limit of {MAX_CODE_BYTES} bytes)"
        if why:
            raise ArchiveUnreadable(f"{path}: refusing to read: {name} {why}")
        if _is_data(name):
            data_total += info.file_size
    if data_total > data_limit:
        raise ArchiveUnreadable(
            f"{path}: refusing to read: its data/ entries declare {data_total} bytes, over "
            f"the limit of {data_limit} ({DATA_LIMIT_ENV} raises it)"
        )
    return infos


def read_entry(zf: zipfile.ZipFile, info: zipfile.ZipInfo) -> bytes:
    """An entry already checked by :func:`checked_entries` (zipfile stops at its declared
    size, so a lying size cannot make it read more)."""
    with zf.open(info) as fh:
        return fh.read(MAX_CODE_BYTES + 1)
