"""Real code after the migration: do its programs still run, with the same numbers?

    python benchmarks/corpus_programs.py [--package timm torchvision] [--intent drop ...]

For each installed package and intent, a copy of the whole installed package is migrated with
`migrate apply --isolated --allow-dirty --unsafe-fixes --intent I`. Then one program per
architecture builds the model (random weights, seeded) and runs it on one seeded image, once
from the installed package and once from the migrated copy, each in its own process. Printed:
the findings, what apply fixed, the `torch.jit` lines before and after, and per architecture
the largest difference between the two outputs. Under keep-scriptable each model is also
scripted with `torch.jit.script`: every architecture that scripts from the installed package
must still script from the migrated one and give the same numbers (the promise kept).

The packages' own test suites are not installed with them; these programs stand in for them.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ARCHITECTURES = {
    "timm": (
        "resnet18 convnext_atto efficientnet_b0 mobilenetv3_small_050 regnetx_002 densenet121 "
        "cspresnet50 ghostnet_050 levit_128s poolformer_s12 edgenext_xx_small mobilevit_xxs "
        "vit_tiny_patch16_224 deit_tiny_patch16_224 swin_tiny_patch4_window7_224 "
        "mixer_s16_224 coat_lite_tiny"
    ).split(),
    "torchvision": (
        "resnet18 mobilenet_v2 mobilenet_v3_small squeezenet1_0 shufflenet_v2_x0_5 mnasnet0_5 "
        "regnet_y_400mf efficientnet_b0 densenet121 googlenet convnext_tiny vit_b_16 swin_t"
    ).split(),
}
# Transformers that take their image size as an argument (64 keeps the runs short).
SIZED = re.compile(r"vit_|deit|swin_tiny|mixer|coat")
INTENTS = ("drop", "keep-scriptable")
FIXED = re.compile(r"Fixed (\d+) finding")


def build(package: str, name: str):
    import torch

    torch.manual_seed(0)
    if package == "timm":
        import timm

        sized = {"img_size": 64} if SIZED.search(name) else {}
        return timm.create_model(name, pretrained=False, num_classes=10, **sized).eval()
    import torchvision

    sized = {"image_size": 64} if name == "vit_b_16" else {}
    extra = {"aux_logits": False, "init_weights": True} if name == "googlenet" else {}
    return torchvision.models.get_model(name, weights=None, num_classes=10, **sized, **extra).eval()


def worker(package: str, names: list[str], script: bool) -> None:
    """Print {name: outputs or "ERROR ..."} (and {name + " scripted": ...}) as JSON."""
    import torch

    # torchvision's C++ ops need CUDA here: their schemas, so that it imports on the CPU.
    lib = torch.library.Library("torchvision", "DEF")  # noqa: F841 (kept alive)
    for op in ("nms", "qnms"):
        lib.define(f"{op}(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
    torch.set_num_threads(1)
    out: dict[str, object] = {"from": __import__(package).__file__}
    for name in names:
        for scripted in (False, True) if script else (False,):
            key = f"{name} scripted" if scripted else name
            try:
                model = build(package, name)
                if scripted:
                    model = torch.jit.script(model)
                torch.manual_seed(1)
                with torch.no_grad():
                    out[key] = model(torch.randn(1, 3, 64, 64)).flatten().tolist()
            except Exception as exc:  # a program's failure is a result here
                out[key] = f"ERROR {type(exc).__name__}: {str(exc).splitlines()[0][:160]}"
    print(json.dumps(out))


def run_programs(package: str, names: list[str], script: bool, path: Path | None) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if path is not None:
        env["PYTHONPATH"] = str(path)
    flags = ["--script"] if script else []
    proc = subprocess.run(
        [sys.executable, __file__, "--worker", package, *flags, *names],
        env=env,
        cwd=tempfile.gettempdir(),
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        raise SystemExit(f"{package}: the program run failed: {proc.stderr.strip()[-300:]}")
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    expected = str(path / package) if path else None
    if expected and not result["from"].startswith(expected):
        raise SystemExit(f"{package}: imported {result['from']}, not the migrated copy")
    return result


def jit_lines(tree: Path) -> int:
    return sum(
        line.count("torch.jit")
        for file in tree.rglob("*.py")
        for line in file.read_text(encoding="utf-8", errors="replace").splitlines()
    )


def migrate(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "migrate", *args], env=env, cwd=cwd, capture_output=True, text=True
    )


def difference(a, b) -> str:
    if isinstance(a, str) or isinstance(b, str):
        return (
            "same error"
            if a == b
            else f"{'ok' if not isinstance(a, str) else a} -> "
            + ("ok" if not isinstance(b, str) else b)
        )
    if len(a) != len(b):
        return "other shape"
    return f"{max(abs(x - y) for x, y in zip(a, b, strict=True)):.1e}"


def measure(package: str, intent: str, scratch: Path) -> bool:
    installed = Path(importlib.util.find_spec(package).origin).parent  # not imported here
    copy = scratch / intent / package
    shutil.copytree(installed, copy, ignore=shutil.ignore_patterns("__pycache__"))
    scan = migrate("scan", "--isolated", "--no-cache", "--format", "json", package, cwd=copy.parent)
    findings = len(json.loads(scan.stdout)["findings"])
    before, started = jit_lines(copy), time.monotonic()
    flags = ["--isolated", "--allow-dirty", "--unsafe-fixes", "--intent", intent]
    applied = migrate("apply", *flags, package, cwd=copy.parent)
    fixed = FIXED.search(applied.stdout)
    seconds = time.monotonic() - started
    names, script = ARCHITECTURES[package], intent == "keep-scriptable"
    old = run_programs(package, names, script, None)
    new = run_programs(package, names, script, copy.parent)
    keys = [k for k in old if k != "from"]
    same = [k for k in keys if difference(old[k], new[k]) in ("0.0e+00", "same error")]
    print(
        f"\n{package} [{intent}]: {findings} findings, fixed "
        f"{fixed.group(1) if fixed else 0} ({seconds:.0f} s); torch.jit lines "
        f"{before} -> {jit_lines(copy)}; programs with the same output: {len(same)}/{len(keys)}"
    )
    for key in keys:
        print(f"  {key:<36} {difference(old[key], new[key])}")
    return len(same) == len(keys)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--package", nargs="+", default=list(ARCHITECTURES), choices=ARCHITECTURES)
    parser.add_argument("--intent", nargs="+", default=list(INTENTS), choices=INTENTS)
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--script", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("names", nargs="*", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.names, args.script)
        return 0
    os.nice(10)  # a benchmark: the processes it starts run niced too
    scratch = Path(tempfile.mkdtemp(prefix="migrate-corpus-programs-"))
    try:
        results = [measure(p, i, scratch) for p in args.package for i in args.intent]
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
