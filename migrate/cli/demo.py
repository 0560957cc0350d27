"""`migrate demo`: the whole story on the bundled sample repository, in a temporary copy.

scan -> report -> apply --dry-run (the diff) -> apply -> verify (when the verify extra is
installed). Each step runs the real command in this process and prints it as a user would
type it, so what the demo shows is what the tool does.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from migrate.gitsafe import inside_work_tree
from migrate.verify.errors import install_command

_PACKAGE_DIR = Path(__file__).resolve().parent.parent

# Top-level functions in the sample that `migrate verify` can call: they return the model
# (or the model and its example inputs). A module-level `EXAMPLE_SHAPE = (2, 6)` in the sample
# gives the example input's shape when the factory returns the model alone.
VERIFY_FACTORIES = ("build_model", "make_model", "create_model", "get_model", "example")


def sample_dir() -> Path | None:
    """The sample: migrate/_sample in a wheel, fixtures/repos/sample/before in a checkout."""
    for candidate in (
        _PACKAGE_DIR / "_sample",
        _PACKAGE_DIR.parent / "fixtures" / "repos" / "sample" / "before",
    ):
        if candidate.is_dir():
            return candidate
    return None


@dataclass
class Step:
    args: list[str]
    expected: tuple[int, ...]  # exit codes that mean "worked as designed"
    note: str


def find_example_shape(root: Path) -> str | None:
    """`--input-shape` from a module-level `EXAMPLE_SHAPE = (2, 6)` in the sample, if any."""
    for path in sorted(root.rglob("*.py")):
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (OSError, SyntaxError, UnicodeDecodeError):
            continue
        for node in tree.body:
            if (
                isinstance(node, ast.Assign)
                and any(isinstance(t, ast.Name) and t.id == "EXAMPLE_SHAPE" for t in node.targets)
                and isinstance(node.value, (ast.Tuple, ast.List))
                and node.value.elts
                and all(
                    isinstance(e, ast.Constant) and type(e.value) is int for e in node.value.elts
                )
            ):
                return "x".join(str(e.value) for e in node.value.elts)  # type: ignore[attr-defined]
    return None


def find_verify_target(root: Path) -> str | None:
    """`module:function` for the sample's model factory, importable with root on sys.path."""
    for path in sorted(root.rglob("*.py")):
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (OSError, SyntaxError, UnicodeDecodeError):
            continue
        names = {
            node.name
            for node in tree.body
            if isinstance(node, ast.FunctionDef) and node.name in VERIFY_FACTORIES
        }
        for factory in VERIFY_FACTORIES:
            if factory in names:
                rel = path.relative_to(root).with_suffix("")
                parts = [p for p in rel.parts if p != "__init__"]
                return ".".join(parts) + f":{factory}"
    return None


def _verify_available(app) -> str | None:
    """None when `migrate verify` can run here (a command of `app`); otherwise why not."""
    names = {c.name or (c.callback.__name__ if c.callback else "") for c in app.registered_commands}
    if "verify" not in names:
        return "`migrate verify` is not part of this build"
    missing = [m for m in ("torch", "executorch") if importlib.util.find_spec(m) is None]
    if missing:
        return (
            f"{' and '.join(missing)} not installed ({install_command('verify')} to see this step)"
        )
    return None


def run_demo(
    app,
    workdir: Path | None = None,
    verify: bool = True,
    echo: Callable[[str], None] = print,
    sample: Path | None = None,
) -> int:
    """Run the story through `app` (the typer app, in this process); returns 0 when every step
    behaved as designed, else 2."""
    sample = sample or sample_dir()
    if sample is None or not sample.is_dir():
        echo("error: the bundled sample repository is missing from this installation")
        return 2
    base = Path(tempfile.mkdtemp(prefix="migrate-demo-")) if workdir is None else workdir
    base.mkdir(parents=True, exist_ok=True)
    target = base / "sample"
    if target.exists():
        echo(f"error: {target} exists; pick an empty folder")
        return 2
    shutil.copytree(sample, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    started = time.perf_counter()
    echo(f"Copied the sample repository to {target}")

    apply_args = ["apply", "--unsafe-fixes", "sample"]
    if inside_work_tree(base) is not False:
        # The copy is untracked inside someone's work tree: apply would refuse to touch it.
        apply_args.insert(1, "--allow-dirty")
    steps = [
        Step(["scan", "sample"], (0, 1), "Every TorchScript use and CUDA 12.8 pin, by rule."),
        Step(
            ["report", "sample", "--format", "html", "-o", "sample-plan.html"],
            (0,),
            "A migration plan for the whole repository (open the HTML in a browser).",
        ),
        Step(
            ["apply", "--dry-run", "--unsafe-fixes", "sample"],
            (0, 1),
            "Every automatic rewrite as a diff, unsafe ones too (`migrate rules` says which).",
        ),
        Step(apply_args, (0, 1), "Write them; what needs a person is listed."),
    ]
    failed = False
    previous = Path.cwd()
    os.chdir(base)
    try:
        for step in steps:
            echo(f"\n$ migrate {' '.join(step.args)}    # {step.note}")
            sys.stdout.flush()
            code = _run_in_process(app, step.args)
            # The step's stderr lines (`wrote ...`) stay beside its stdout, not after the end.
            sys.stdout.flush()
            sys.stderr.flush()
            if code not in step.expected:
                echo(f"(exit {code}: unexpected)")
                failed = True
        if verify:
            failed |= not _verify_step(app, target, echo)
    finally:
        os.chdir(previous)
    elapsed = time.perf_counter() - started
    echo(f"\nDemo finished in {elapsed:.1f} s.")
    echo(f"The migrated copy is in {target}; the plan is {base / 'sample-plan.html'}.")
    return 2 if failed else 0


def _run_in_process(app, args: list[str]) -> int:
    try:
        result = app(args=args, prog_name="migrate", standalone_mode=False)
    except SystemExit as exc:  # pragma: no cover - standalone_mode=False returns codes
        return int(exc.code or 0)
    except Exception as exc:  # click usage errors
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return int(result or 0)


def _verify_step(app, target: Path, echo: Callable[[str], None]) -> bool:
    why_not = _verify_available(app)
    factory = find_verify_target(target)
    if why_not is None and factory is None:
        why_not = f"no model factory ({', '.join(VERIFY_FACTORIES)}) in the sample"
    if why_not:
        echo(f"\n(skipping `migrate verify`: {why_not})")
        return True
    args = [factory]
    shape = find_example_shape(target)
    if shape:
        args += ["--input-shape", shape]
    echo(
        f"\n$ migrate verify {' '.join(args)}    # The migrated model gives the TorchScript numbers."
    )
    sys.stdout.flush()
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(target), env.get("PYTHONPATH")]))
    proc = subprocess.run(
        [sys.executable, "-m", "migrate", "verify", *args],
        cwd=target,
        env=env,
    )
    if proc.returncode != 0:
        echo(f"(exit {proc.returncode}: unexpected)")
    return proc.returncode == 0
