"""The scan path never imports torch or executorch: `import migrate.cli` and a whole scan, run
in a fresh interpreter, leave both out of sys.modules."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from tests.scan_support import SCAN_FIXTURES, clean_env

PROBE = textwrap.dedent(
    """
    import json, sys
    from typer.testing import CliRunner

    import migrate.cli.commands
    after_import = sorted(m for m in sys.modules if m.split(".")[0] in ("torch", "executorch"))

    from migrate.scan.engine import ScanOptions
    from migrate.pipeline.scan import PlannedScanner as Scanner
    result = Scanner(ScanOptions(cache=False, jobs=1)).scan([sys.argv[1]])
    run = CliRunner().invoke(migrate.cli.commands.app, ["scan", sys.argv[1], "-f", "sarif", "--no-cache"])
    after_scan = sorted(m for m in sys.modules if m.split(".")[0] in ("torch", "executorch"))
    print(json.dumps({
        "after_import": after_import,
        "after_scan": after_scan,
        "findings": len(result.findings),
        "cli_exit": run.exit_code,
    }))
    """
)


def test_scan_path_never_imports_torch(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, str(SCAN_FIXTURES / "mixed_repo")],
        capture_output=True,
        text=True,
        env=clean_env(tmp_path),
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout.splitlines()[-1])
    assert report["after_import"] == []
    assert report["after_scan"] == []
    # The probe really scanned something (a scan of nothing would prove nothing).
    assert report["findings"] > 30 and report["cli_exit"] == 1


def test_scan_works_when_torch_cannot_be_imported(tmp_path):
    """With torch made unimportable the scan still runs (the `migrate` extra is optional)."""
    blocker = tmp_path / "block"
    blocker.mkdir()
    for name in ("torch", "executorch"):
        (blocker / f"{name}.py").write_text(f"raise ImportError('{name} is blocked')\n")
    env = clean_env(tmp_path, PYTHONPATH=str(blocker))
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "migrate",
            "scan",
            str(SCAN_FIXTURES / "mixed_repo" / "mixed"),
            "-f",
            "json",
            "--no-cache",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 1, proc.stderr
    assert json.loads(proc.stdout)["summary"]["findings"] > 20
