"""`migrate convert` against the bare path, per archive, on a zoo of common
architectures (timm, torchvision, transformers tiny configs; traced and scripted; random
weights built in code, nothing downloaded).

For every archive, in the same run and on the same machine:

- bare:  ``torch.jit.load`` + ``TS2EPConverter(ts, (x,)).convert()`` +
  ``to_edge_transform_and_lower(ep, partitioner=[XnnpackPartitioner()]).to_executorch()``
- tool:  ``run_convert`` (what ``migrate convert ARCHIVE --input-shape ... -o OUT`` runs:
  load + audit, reference outputs, the recovery ladder, lowering, the .pte checked on
  the samples, the .pt2/.pte written)

each in its own worker process (imports are paid before the clock starts, and a hung
conversion is killed at ``--timeout``). The table prints both times, both results, the
tool's recovery path and the ratio; the totals and the median ratio close it.

Run:  python benchmarks/convert_vs_bare.py [--quick] [--only NAME] [--timeout 300]
      [--json rows.json]   (the rows so far are rewritten after every archive)
      python benchmarks/convert_vs_bare.py --table-from rows.json   (docs/performance.md's table)
Both workers run with the same torch thread count (``--threads``, default 1), and each
reports its wall and CPU seconds: on a shared machine the CPU ratio is the steadier one.
Needs timm, torchvision and transformers (``pip install --no-deps timm torchvision==0.28.0
transformers safetensors`` next to torch 2.13); the architectures of a missing package are
skipped with a note.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from migrate.verify.errors import one_line  # noqa: E402  (no torch import)


def _torchvision_ops() -> None:
    """torchvision's Python package registers fake kernels for ``torchvision::nms``/``qnms``
    at import; without its C extension those operators do not exist and the import fails.
    Defining their schemas first lets the import (and the model builders) work."""
    import torch

    if hasattr(torch.ops.torchvision, "nms"):
        return
    lib = torch.library.Library("torchvision", "DEF")
    lib.define("nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
    lib.define("qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
    _torchvision_ops.lib = lib  # type: ignore[attr-defined]  # keep the library alive


# --------------------------------------------------------------------------- the zoo


def _timm(name: str, sized: bool = False) -> Callable[[int], Any]:
    """A timm model; ``sized``: it takes the image size (ViT-like, fixed patch grids)."""

    def build(size: int) -> Any:
        _torchvision_ops()  # timm imports torchvision when it is installed
        import timm

        extra = {"img_size": size} if sized else {}
        return timm.create_model(name, pretrained=False, num_classes=10, **extra)

    return build


def _tv(name: str, **kw: Any) -> Callable[[int], Any]:
    def build(size: int) -> Any:
        _torchvision_ops()
        import torchvision

        return getattr(torchvision.models, name)(weights=None, num_classes=10, **kw)

    return build


def _hf(kind: str) -> Callable[[int], Any]:
    def build(size: int) -> Any:
        _torchvision_ops()  # transformers imports torchvision too (BertModel fails without)
        import transformers as tf

        if kind == "bert":
            cfg = tf.BertConfig(
                vocab_size=99, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                intermediate_size=37, max_position_embeddings=64, torchscript=True,
            )  # fmt: skip
            model = tf.BertModel(cfg)
        elif kind == "gpt2":
            # No key/value cache: the trace cannot return the cache object.
            cfg = tf.GPT2Config(
                vocab_size=99, n_embd=32, n_layer=2, n_head=2, n_positions=64, torchscript=True,
                use_cache=False,
            )  # fmt: skip
            model = tf.GPT2Model(cfg)
        else:
            cfg = tf.ViTConfig(
                image_size=32, patch_size=8, hidden_size=32, num_hidden_layers=2,
                num_attention_heads=2, intermediate_size=37, torchscript=True,
            )  # fmt: skip
            model = tf.ViTModel(cfg, add_pooling_layer=False)
        model.config.return_dict = False
        return model

    return build


#: name -> (package, builder(image size), input kind, TorchScript kinds to try)
ZOO: dict[str, tuple[str, Callable[[int], Any], str, tuple[str, ...]]] = {
    "timm resnet18": ("timm", _timm("resnet18"), "image", ("trace", "script")),
    "timm convnext_atto": ("timm", _timm("convnext_atto"), "image", ("trace", "script")),
    "timm efficientnet_b0": ("timm", _timm("efficientnet_b0"), "image", ("trace", "script")),
    "timm mobilenetv3_small_050": (
        "timm",
        _timm("mobilenetv3_small_050"),
        "image",
        ("trace", "script"),
    ),  # fmt: skip
    "timm regnetx_002": ("timm", _timm("regnetx_002"), "image", ("trace", "script")),
    "timm vit_tiny": (
        "timm",
        _timm("vit_tiny_patch16_224", sized=True),
        "image",
        ("trace", "script"),
    ),  # fmt: skip
    "timm deit_tiny": (
        "timm",
        _timm("deit_tiny_patch16_224", sized=True),
        "image",
        ("trace", "script"),
    ),  # fmt: skip
    "timm swin_tiny": (
        "timm",
        _timm("swin_tiny_patch4_window7_224", sized=True),
        "image",
        ("trace", "script"),
    ),  # fmt: skip
    "timm mobilevit_xxs": ("timm", _timm("mobilevit_xxs"), "image", ("trace",)),
    "tv resnet18": ("torchvision", _tv("resnet18"), "image", ("trace", "script")),
    "tv mobilenet_v2": ("torchvision", _tv("mobilenet_v2"), "image", ("trace", "script")),
    "tv squeezenet1_0": ("torchvision", _tv("squeezenet1_0"), "image", ("trace", "script")),
    "tv shufflenet_v2_x0_5": (
        "torchvision",
        _tv("shufflenet_v2_x0_5"),
        "image",
        ("trace", "script"),
    ),  # fmt: skip
    "tv mnasnet0_5": ("torchvision", _tv("mnasnet0_5"), "image", ("trace", "script")),
    "tv regnet_y_400mf": ("torchvision", _tv("regnet_y_400mf"), "image", ("trace", "script")),
    "tv efficientnet_b0": ("torchvision", _tv("efficientnet_b0"), "image", ("trace", "script")),
    "timm densenet121": ("timm", _timm("densenet121"), "image", ("trace", "script")),
    "hf bert": ("transformers", _hf("bert"), "ids", ("trace",)),
    "hf gpt2": ("transformers", _hf("gpt2"), "ids", ("trace",)),
    "hf vit": ("transformers", _hf("vit"), "image32", ("trace",)),
}
#: A few small architectures for a short run (``--quick``).
QUICK = ("tv squeezenet1_0", "timm mobilenetv3_small_050", "hf bert")


def _example(kind: str, size: int) -> tuple[Any, str]:
    import torch

    if kind == "ids":
        return (torch.randint(0, 99, (1, 8)),), "1x8:int64"
    side = 32 if kind == "image32" else size
    return (torch.randn(1, 3, side, side),), f"1x3x{side}x{side}"


def _archive(name: str, kind: str, size: int, folder: Path) -> tuple[Path, str]:
    import torch

    _, build, inputs, _ = ZOO[name]
    torch.manual_seed(0)
    model = build(size).eval()
    example, shape = _example(inputs, size)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ts = (
            torch.jit.script(model)
            if kind == "script"
            else torch.jit.trace(model, example, check_trace=False, strict=False)
        )
        path = folder / f"{name.replace(' ', '_')}_{kind}.pt"
        torch.jit.save(ts, str(path))
    return path, shape


def zoo_archives(
    names: list[str], kind: str | None, size: int, folder: Path
) -> Iterator[tuple[str, Path, str]]:
    """(label, archive, input shape) of each of ``names``' archives (``kind``: only traced or
    scripted), built into ``folder``; one that cannot be built is skipped, saying why."""
    for name in names:
        package, _, _, kinds = ZOO[name]
        for k in kinds:
            if kind and k != kind:
                continue
            label = f"{name} ({'traced' if k == 'trace' else 'scripted'})"
            try:
                archive, shape = _archive(name, k, size, folder)
            except ImportError as exc:
                print(f"{label:<34} skipped: {package} not installed ({exc})", flush=True)
                continue
            except Exception as exc:
                print(f"{label:<34} skipped: cannot build ({type(exc).__name__}: "
                      f"{str(exc).splitlines()[0][:80] if str(exc) else ''})",
                      flush=True)  # fmt: skip
                continue
            yield label, archive, shape


# --------------------------------------------------------------------------- the workers


def _worker(way: str, archive: str, shape: str, out: str, threads: int) -> dict[str, Any]:
    """One conversion, timed after the imports; prints its result as a JSON line."""
    import torch

    torch.set_num_threads(threads)  # the same for both ways: a fair ratio on a shared machine
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
    from executorch.exir import to_edge_transform_and_lower
    from torch._export.converter import TS2EPConverter

    from migrate.verify import inputs as inp
    from migrate.verify.convert_flow import run_convert
    from migrate.verify.errors import VerifyError, describe, quiet

    example = inp.example_from_options(None, [shape], 0, 1, None)
    start, cpu = time.perf_counter(), time.process_time()

    def spent() -> dict[str, float]:
        return {"seconds": time.perf_counter() - start, "cpu": time.process_time() - cpu}

    try:
        if way == "bare":
            with quiet():
                ts = torch.jit.load(archive, map_location="cpu")
                ep = TS2EPConverter(ts, tuple(example)).convert()
                pm = to_edge_transform_and_lower(ep, partitioner=[XnnpackPartitioner()])
                Path(out).write_bytes(pm.to_executorch().buffer)
            return {"ok": True, **spent(), "path": "converter"}
        # The archives are built by this script from code: trusted, as the bare path trusts
        # them (it never audits).
        res = run_convert(archive, None, [shape], Path(out), trust=True)
        rec = res.recoveries["forward"]
        return {
            "ok": res.mismatch is None,
            **spent(),
            "path": f"{rec.path} / {rec.lower_path}",
            "why": rec.why,
            "error": res.mismatch,
            "timings": {k: round(v, 2) for k, v in res.timings.items()},
        }
    except VerifyError as exc:
        return {"ok": False, **spent(), "error": str(exc)}
    except Exception as exc:
        return {"ok": False, **spent(), "error": describe(exc)}


def _measure(
    way: str, archive: Path, shape: str, out: Path, timeout: float, threads: int
) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--worker", way, str(archive), shape, str(out), str(threads)]
    env = dict(os.environ, PYTHONPATH=str(REPO))
    try:
        proc = subprocess.run(
            cmd, capture_output=True, text=True, env=env, timeout=timeout + 120
        )  # imports take up to two minutes on a loaded machine; the run itself gets timeout
    except subprocess.TimeoutExpired:
        return {"ok": False, "seconds": None, "error": f"timed out ({timeout:.0f} s)"}
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if not lines:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return {"ok": False, "seconds": None, "error": f"worker exit {proc.returncode}: {tail}"}
    result = json.loads(lines[-1])
    if result["ok"] and result["seconds"] > timeout:
        result.update(ok=False, error=f"over the {timeout:.0f} s limit")
    return result


# --------------------------------------------------------------------------- the table


def _cell(r: dict[str, Any]) -> str:
    secs = "-" if r.get("seconds") is None else f"{r['seconds']:.1f} s"
    return f"{secs:>8} {'ok' if r['ok'] else 'FAIL':<4}"


def _ratio(row: dict[str, Any], key: str) -> float | None:
    """tool / bare in ``key`` (seconds or cpu) where both converted, else None."""
    bare, tool = row["bare"], row["tool"]
    if not (bare["ok"] and tool["ok"]) or not bare.get(key) or tool.get(key) is None:
        return None
    return tool[key] / bare[key]


def summary(rows: list[dict[str, Any]]) -> list[str]:
    """The closing lines: who converts what, and the median ratios where both convert."""
    both = [r for r in rows if _ratio(r, "seconds") is not None]
    out = [
        f"total: {len(rows)} archives; bare converts {sum(r['bare']['ok'] for r in rows)}, "
        f"the tool {sum(r['tool']['ok'] for r in rows)}; the tool only: "
        f"{sum(r['tool']['ok'] and not r['bare']['ok'] for r in rows)}; bare only: "
        f"{sum(r['bare']['ok'] and not r['tool']['ok'] for r in rows)}"
    ]
    if both:
        cpu = [x for x in (_ratio(r, "cpu") for r in both) if x is not None]
        out.append(
            f"where both convert ({len(both)}): bare {sum(r['bare']['seconds'] for r in both):.1f}"
            f" s, tool {sum(r['tool']['seconds'] for r in both):.1f} s in total; median ratio "
            f"{statistics.median(_ratio(r, 'seconds') for r in both):.2f}x wall"
            + (f", {statistics.median(cpu):.2f}x CPU" if cpu else "")
        )
    return out


def _md_cell(r: dict[str, Any]) -> str:
    secs = r.get("seconds")
    if secs is None:
        return str(r.get("error") or "no result")
    text = f"{secs:.1f} s" + (f" ({r['cpu']:.1f} s CPU)" if r.get("cpu") is not None else "")
    if r["ok"]:
        return text + " ok"
    err = str(r.get("error") or "")
    cls = re.search(r"([A-Z]\w*(?:Error|Exception|Node|Violation\w*))", err)
    return f"{text}, fails (`{cls.group(1) if cls else err[:60]}`)"


def table(rows: list[dict[str, Any]]) -> list[str]:
    """docs/performance.md's table (Markdown) of ``rows`` and its summary lines."""
    out = [
        "| archive | bare | tool | ratio (wall / CPU) | tool's path / lowering |",
        "|---|---|---|---:|---|",
    ]
    for row in rows:
        wall, cpu = _ratio(row, "seconds"), _ratio(row, "cpu")
        ratio = "-" if wall is None else f"{wall:.2f} / {'-' if cpu is None else f'{cpu:.2f}'}"
        tool = row["tool"]
        path = (tool.get("path") or "-") if tool["ok"] else one_line(tool.get("error"), 160)
        out.append(f"| {row['archive']} | {_md_cell(row['bare'])} | {_md_cell(tool)} | "
                   f"{ratio} | {path} |")  # fmt: skip
    return [*out, "", *summary(rows)]


def _write_rows(path: Path, rows: list[dict[str, Any]]) -> None:
    """The rows so far, replaced whole (a reader never sees half a file)."""
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w") as fh:
        fh.write(json.dumps(rows, indent=2) + "\n")
        fh.flush()
        os.fsync(fh.fileno())
    tmp.replace(path)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", action="append", help="architectures whose name contains this")
    ap.add_argument("--quick", action="store_true", help=f"only {', '.join(QUICK)}")
    ap.add_argument("--kind", choices=("trace", "script"), help="only traced or scripted")
    ap.add_argument("--size", type=int, default=64, help="image side (default 64)")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds per conversion")
    ap.add_argument("--threads", type=int, default=1, help="torch threads of both workers")
    ap.add_argument("--json", type=Path, help="write the rows to this file after every archive")
    ap.add_argument("--table-from", type=Path, metavar="JSON", help="print the table of a --json")
    ap.add_argument("--worker", nargs=5, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        way, archive, shape, out, threads = args.worker
        print(json.dumps(_worker(way, archive, shape, out, int(threads))), flush=True)
        return 0
    if args.table_from:
        try:
            rows = json.loads(args.table_from.read_text())
        except (OSError, ValueError) as exc:
            ap.error(f"--table-from {args.table_from}: cannot read it ({exc})")
        print("\n".join(table(rows)))
        return 0
    names = list(QUICK if args.quick else ZOO)
    if args.only:
        names = [n for n in ZOO if any(o.lower() in n.lower() for o in args.only)]
        if not names:
            ap.error(f"--only {args.only}: no architecture matches (see the ZOO table)")
    print(f"load average at start: {os.getloadavg()[0]:.1f}; {os.cpu_count()} cores; "
          f"{args.threads} torch thread(s)", flush=True)  # fmt: skip
    header = f"{'archive':<34} {'bare':>13} {'tool':>13}  ratio  tool's path / error"
    print(header, flush=True)
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="convert-vs-bare-") as tmp:
        folder = Path(tmp)
        for label, archive, shape in zoo_archives(names, args.kind, args.size, folder):
            load_avg = os.getloadavg()[0]
            bare = _measure("bare", archive, shape, folder / "bare.pte", args.timeout,
                            args.threads)  # fmt: skip
            tool = _measure("tool", archive, shape, folder / label.replace(" ", "_"),
                            args.timeout, args.threads)  # fmt: skip
            row = {"archive": label, "bare": bare, "tool": tool, "load": load_avg}
            row["ratio"] = _ratio(row, "seconds")
            row["cpu_ratio"] = _ratio(row, "cpu")
            ratio = row["ratio"]
            why = tool.get("path") if tool["ok"] else tool.get("error", "")
            if not bare["ok"]:
                why = f"{why}  [bare: {str(bare.get('error', ''))[:80]}]"
            print(f"{label:<34} {_cell(bare)} {_cell(tool)}  "
                  f"{'-' if ratio is None else f'{ratio:4.2f}x':>5}  {str(why)[:120]}",
                  flush=True)  # fmt: skip
            rows.append(row)
            if args.json:
                _write_rows(args.json, rows)
    if not rows:
        print("no archive built")
        return 1
    print("\n" + "\n".join(summary(rows)))
    print(f"load average at end: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
