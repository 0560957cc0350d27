"""Hostile archives built from real ones: a ``torch.jit.save`` archive (or a
``torch.export.save`` program) rewritten entry by entry with :mod:`zipfile`, or by hand
where zipfile cannot write the entry (a deflate stream of gigabytes, built from one
repeated flushed segment so that making it costs milliseconds)."""

from __future__ import annotations

import io
import json
import os
import struct
import subprocess
import sys
import warnings
import zipfile
import zlib
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[2]


class PlusOne(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.ones(3))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.w


def base_archive(folder: Path) -> Path:
    """A real TorchScript archive of :class:`PlusOne` (forward ``return torch.add(x, w)``)."""
    path = folder / "base.pt"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.jit.save(torch.jit.script(PlusOne()), str(path))
    return path


def code_name(archive: Path) -> str:
    """The entry holding PlusOne's TorchScript (``<archive>/code/__torch__/tests/...py``)."""
    with zipfile.ZipFile(archive) as zf:
        return next(
            n for n in zf.namelist() if n.endswith(".py") and b"class PlusOne" in zf.read(n)
        )


def code_label(archive: Path) -> str:
    """How the audit names that entry: ``code/...``."""
    name = code_name(archive)
    return name[name.index("code/") :]


def forward_code(archive: Path) -> str:
    with zipfile.ZipFile(archive) as zf:
        return zf.read(code_name(archive)).decode()


def with_forward(base: Path, dst: Path, body: str) -> Path:
    """``base`` whose forward runs ``body`` (lines indented by 4) before its return."""
    code = forward_code(base)
    ret = next(line for line in code.splitlines() if line.strip().startswith("return "))
    lines = "".join(f"    {line}\n" for line in body.split("\n"))
    return rewrite(base, dst, {code_name(base): code.replace(ret + "\n", lines + ret + "\n")})


def rewrite(
    base: Path,
    dst: Path,
    replace: dict[str, str | bytes] | None = None,
    rename: dict[str, str] | None = None,
    before: dict[str, str | bytes] | None = None,
) -> Path:
    """Copy ``base`` entry by entry: ``replace`` an entry's bytes, ``rename`` it, or write
    another entry ``before`` it (the same name twice: torch reads the first)."""
    replace, rename, before = replace or {}, rename or {}, before or {}
    with zipfile.ZipFile(base) as src, zipfile.ZipFile(dst, "w") as out, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns of a duplicate name: that is the point
        for info in src.infolist():
            name = info.filename
            if name in before:
                out.writestr(name, _bytes(before[name]), compress_type=info.compress_type)
            data = _bytes(replace[name]) if name in replace else src.read(info)
            out.writestr(rename.get(name, name), data, compress_type=info.compress_type)
    return dst


def _bytes(data: str | bytes) -> bytes:
    return data.encode() if isinstance(data, str) else data


# --------------------------------------------------------------------------- zip bombs


def _gf2_times(mat: list[int], vec: int) -> int:
    total, i = 0, 0
    while vec:
        if vec & 1:
            total ^= mat[i]
        vec >>= 1
        i += 1
    return total


def crc32_combine(crc1: int, crc2: int, len2: int) -> int:
    """zlib's crc32_combine: the CRC of A+B from CRC(A), CRC(B) and len(B), in log time."""
    if len2 == 0:
        return crc1
    odd = [0xEDB88320] + [1 << n for n in range(31)]  # one zero bit
    even = [_gf2_times(odd, odd[n]) for n in range(32)]  # two
    odd = [_gf2_times(even, even[n]) for n in range(32)]  # four
    while True:
        even = [_gf2_times(odd, odd[n]) for n in range(32)]
        if len2 & 1:
            crc1 = _gf2_times(even, crc1)
        len2 >>= 1
        if not len2:
            break
        odd = [_gf2_times(even, even[n]) for n in range(32)]
        if len2 & 1:
            crc1 = _gf2_times(odd, crc1)
        len2 >>= 1
        if not len2:
            break
    return crc1 ^ crc2


def zero_bomb(size: int, chunk: int = 1 << 20) -> tuple[bytes, int]:
    """A raw deflate stream of ``size`` zero bytes (a multiple of ``chunk``) and its CRC."""
    comp = zlib.compressobj(9, zlib.DEFLATED, -15)
    segment = comp.compress(bytes(chunk)) + comp.flush(zlib.Z_FULL_FLUSH)
    count = size // chunk
    crc, part, part_len, left = None, zlib.crc32(bytes(chunk)), chunk, count
    while left:  # all zeros: the CRC of count chunks from those of 1, 2, 4, ... chunks
        if left & 1:
            crc = part if crc is None else crc32_combine(crc, part, part_len)
        part, part_len, left = crc32_combine(part, part, part_len), part_len * 2, left >> 1
    return segment * count + comp.flush(zlib.Z_FINISH), crc


def write_zip(dst: Path, entries: list[tuple[str, int, bytes, int, int]]) -> Path:
    """A zip of ``(name, method, stored bytes, crc, size)`` entries, written by hand."""
    central = []
    with open(dst, "wb") as fh:
        for name, method, data, crc, size in entries:
            raw, offset = name.encode(), fh.tell()
            fh.write(
                struct.pack(
                    "<IHHHHHIIIHH",
                    0x04034B50,
                    20,
                    0,
                    method,
                    0,
                    0x21,
                    crc,
                    len(data),
                    size,
                    len(raw),
                    0,
                )  # fmt: skip
                + raw
                + data
            )
            central.append(
                struct.pack(
                    "<IHHHHHHIIIHHHHHII",
                    0x02014B50,
                    20,
                    20,
                    0,
                    method,
                    0,
                    0x21,
                    crc,
                    len(data),
                    size,
                    len(raw),
                    0,
                    0,
                    0,
                    0,
                    0,
                    offset,
                )  # fmt: skip
                + raw
            )
        start = fh.tell()
        for record in central:
            fh.write(record)
        end = fh.tell()
        fh.write(struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(central), len(central), end - start, start, 0))  # fmt: skip
    return dst


def with_bomb(base: Path, dst: Path, entry_suffix: str, size: int) -> Path:
    """``base`` with the entry ending in ``entry_suffix`` replaced by ``size`` zero bytes,
    deflated (3 GiB take about 3 MB)."""
    bomb, crc = zero_bomb(size)
    entries = []
    with zipfile.ZipFile(base) as zf:
        for info in zf.infolist():
            if info.filename.endswith(entry_suffix):
                entries.append((info.filename, zipfile.ZIP_DEFLATED, bomb, crc, size))
            else:
                data = zf.read(info)
                entries.append(
                    (info.filename, zipfile.ZIP_STORED, data, zlib.crc32(data), len(data))
                )
    return write_zip(dst, entries)


# --------------------------------------------------------------------------- .pt2


class RunsOnUnpickle:
    """Pickles to an ``eval`` that runs ``os.system(command)`` and returns the weight
    :class:`PlusOne` has (a parameter of ones): what ``torch.load(weights_only=False)``
    runs, leaving a program that still computes the right answer."""

    def __init__(self, command: str) -> None:
        self.command = command

    def __reduce__(self):
        torch_ = "__import__('torch')"
        expr = (
            f"(__import__('os').system({self.command!r}), "
            f"{torch_}.nn.Parameter({torch_}.ones(3)))[1]"
        )
        return (eval, (expr,))


def pt2_with_pickled_weight(folder: Path, command: str) -> Path:
    """A real ``torch.export.save`` program of :class:`PlusOne` whose weight ``w`` is
    marked pickled and holds a pickle that runs ``command``."""
    path = folder / "plus_one.pt2"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ep = torch.export.export(PlusOne(), (torch.zeros(2, 3),))
        torch.export.save(ep, str(path))
    with zipfile.ZipFile(path) as zf:
        config_name = next(n for n in zf.namelist() if n.endswith("model_weights_config.json"))
        config = json.loads(zf.read(config_name))
    meta = config["config"]["w"]
    meta["use_pickle"] = True
    weight = config_name.rsplit("/", 1)[0] + "/" + meta["path_name"]
    buffer = io.BytesIO()
    torch.save(RunsOnUnpickle(command), buffer)
    return rewrite(
        path,
        folder / "hostile.pt2",
        replace={config_name: json.dumps(config), weight: buffer.getvalue()},
    )


# --------------------------------------------------------------------------- the CLI


def run_cli(args: list[str], cwd: Path, memory_limit: int | None = None, env=None):
    """``migrate ARGS`` in a fresh interpreter started the way the installed ``migrate``
    script starts it (this checkout first, the current folder not on sys.path), under an
    address-space limit; returns (process, peak RSS in MiB)."""
    peak_file = cwd / ".peak-rss" if memory_limit else None
    boot = (
        "import sys; sys.path[0] = sys.argv.pop(1)\n"
        "if sys.argv[1]:\n"
        "    import atexit, resource\n"
        "    def _peak(p=sys.argv[1]):\n"
        "        open(p, 'w').write(str(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss))\n"
        "    atexit.register(_peak)\n"
        "del sys.argv[1]\n"
        "from migrate.cli.entry import main\n"
        "main()\n"
    )

    def limit() -> None:  # pragma: no cover - runs in the child
        if memory_limit:
            import resource

            resource.setrlimit(resource.RLIMIT_AS, (memory_limit, memory_limit))

    proc = subprocess.run(
        [sys.executable, "-c", boot, str(REPO), str(peak_file or ""), *map(str, args)],
        cwd=cwd,
        env=env if env is not None else {**os.environ, "PYTHONPATH": ""},
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=limit if memory_limit else None,
    )
    peak = None
    if peak_file is not None and peak_file.exists():
        peak = int(peak_file.read_text()) / 1024
        peak_file.unlink()
    return proc, peak
