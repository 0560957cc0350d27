"""What recording costs: a command's time with and without `migrate record`, side by side.

    python benchmarks/record_cost.py                 # the sample repository's tests
    python benchmarks/record_cost.py --runs 5 -- python serve.py   # any command, here

Without a command it copies fixtures/repos/recorded to a temporary folder and times its
tests (`python -m pytest -q`). Runs alternate plain / recorded so that load on a shared
machine weighs on both alike; the figures are the medians of `--runs` runs of each, and the
ratio recorded / plain. `migrate record`'s own start (typer, the merge) is part of the
recorded time, as a user sees it; the recorder's share alone (the command run with the
recorder on PYTHONPATH, no `migrate` process around it) is printed too.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "fixtures" / "repos" / "recorded"
sys.path.insert(0, str(ROOT))

from migrate.record.run import recorder_env  # noqa: E402


def timed(command: list[str], cwd: Path, env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


CALLS = """
import time, torch
m = torch.jit.script(torch.nn.Linear(16, 4))
x = torch.randn(8, 16)
for _ in range(200):
    m(x)
start = time.perf_counter()
for _ in range({n}):
    m(x)
print((time.perf_counter() - start) / {n} * 1e6)
"""


def per_call(env: dict[str, str], hook_env: dict[str, str], runs: int, n: int = 20000) -> None:
    """The recorder's cost per call of a scripted module, timed inside the process (process
    start and torch's import, the noise of a loaded machine, left out)."""
    code = [sys.executable, "-c", CALLS.format(n=n)]
    times: dict[str, list[float]] = {"plain": [], "recorder": []}
    for _ in range(runs):
        for name, use in (("plain", env), ("recorder", hook_env)):
            out = subprocess.run(code, env=use, capture_output=True, text=True, check=True)
            times[name].append(float(out.stdout.split()[-1]))
    plain, recorded = (statistics.median(times[k]) for k in ("plain", "recorder"))
    print(f"per call of a scripted Linear(16, 4) on 8x16 ({n} calls, {runs} runs, medians):")
    print(
        f"  plain {plain:.1f} us, recorded {recorded:.1f} us: {recorded / plain:.2f}x, "
        f"+{recorded - plain:.1f} us a call"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--per-call", action="store_true", help="Only the per-call cost.")
    parser.add_argument("command", nargs="*")
    args = parser.parse_args()
    temp = Path(tempfile.mkdtemp(prefix="record-cost-"))
    try:
        if args.command:
            cwd, command = Path.cwd(), args.command
        else:
            cwd = temp / "recorded"
            shutil.copytree(SAMPLE, cwd)
            command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
        env = dict(os.environ)
        env.pop("PYTEST_ADDOPTS", None)
        plain_env = dict(
            env, PYTHONPATH=os.pathsep.join(filter(None, [str(cwd), env.get("PYTHONPATH")]))
        )
        tool_env = dict(plain_env, PYTHONPATH=os.pathsep.join([str(ROOT), plain_env["PYTHONPATH"]]))
        evidence = temp / "evidence.json"
        recorded = [sys.executable, "-m", "migrate", "record", "--evidence", str(evidence), "--"]
        parts = temp / "parts"
        parts.mkdir()
        hook_env = recorder_env(parts, cwd, plain_env)
        before = os.getloadavg()[0]
        per_call(plain_env, hook_env, args.runs)
        if args.per_call:
            return
        times: dict[str, list[float]] = {"plain": [], "recorder only": [], "migrate record": []}
        timed(command, cwd, plain_env)  # warm the file cache for both
        for _ in range(args.runs):
            times["plain"].append(timed(command, cwd, plain_env))
            times["recorder only"].append(timed(command, cwd, hook_env))
            times["migrate record"].append(timed([*recorded, *command], cwd, tool_env))
        plain = statistics.median(times["plain"])
        print(f"command: {' '.join(command)}  ({args.runs} runs each, medians)")
        for name, values in times.items():
            median = statistics.median(values)
            spread = ", ".join(f"{v:.2f}" for v in values)
            print(f"  {name:<15} {median:7.2f} s  {median / plain:5.2f}x   ({spread})")
        print(
            f"load average (1 min) {before:.2f} before, {os.getloadavg()[0]:.2f} after, on "
            f"{os.cpu_count()} cores"
        )
    finally:
        shutil.rmtree(temp, ignore_errors=True)


if __name__ == "__main__":
    main()
