"""Serving code outside Python (issue 17): real `migrate scan` subprocesses over
fixtures/repos/native_mix, a Python exporter with a C++ server, an Android app and an iOS
app. One finding per runtime use, none in comments, strings or look-alike names, and the
native loads linked to the Python writers of the same archive (both ways)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from migrate.analysis import native_source

ROOT = Path(__file__).resolve().parent.parent
REPO = ROOT / "fixtures" / "repos" / "native_mix"
ACTIVITY = "android/app/src/main/java/com/example/app/MainActivity.java"

# (path, line, rule, symbol): every runtime use of the sample repository, and nothing else.
EXPECTED = {
    ("android/app/build.gradle", 8, "MIG402", "org.pytorch:pytorch_android_lite"),
    (ACTIVITY, 4, "MIG402", "org.pytorch.IValue"),
    (ACTIVITY, 5, "MIG402", "org.pytorch.LiteModuleLoader"),
    (ACTIVITY, 6, "MIG402", "org.pytorch.Module"),
    (ACTIVITY, 7, "MIG402", "org.pytorch.Tensor"),
    (ACTIVITY, 14, "MIG402", "org.pytorch.LiteModuleLoader.load"),
    ("ios/App/TorchModule.mm", 2, "MIG403", "LibTorch-Lite/LibTorch-Lite.h"),
    ("ios/App/TorchModule.mm", 8, "MIG403", "torch::jit::mobile::Module"),
    ("ios/App/TorchModule.mm", 16, "MIG403", "torch::jit::_load_for_mobile"),
    ("ios/Podfile", 5, "MIG403", "LibTorch-Lite"),
    ("server/CMakeLists.txt", 5, "MIG404", "find_package(Torch)"),
    ("server/CMakeLists.txt", 9, "MIG404", "TORCH_LIBRARIES"),
    ("server/main.cpp", 3, "MIG401", "torch/script.h"),
    ("server/main.cpp", 17, "MIG401", "torch::jit::setFusionStrategy"),
    ("server/main.cpp", 17, "MIG401", "torch::jit::FusionBehavior::STATIC"),
    ("server/main.cpp", 18, "MIG401", "torch::jit::script::Module"),
    ("server/main.cpp", 18, "MIG401", "torch::jit::load"),
    ("server/main.cpp", 19, "MIG401", "torch::jit::IValue"),
}


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Path:
    tree = tmp_path_factory.mktemp("native") / "native_mix"
    shutil.copytree(REPO, tree)
    return tree


def scan(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1", "CI": "1"}
    env["MIGRATE_CACHE_DIR"] = str(repo.parent / "cache")
    return subprocess.run(
        [sys.executable, "-m", "migrate", "scan", *args],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def findings(proc: subprocess.CompletedProcess[str]) -> list[dict]:
    assert proc.returncode == 1, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["errors"] == []
    return doc["findings"]


def by_site(found: list[dict], path: str, line: int, rule: str) -> dict:
    """The finding of `rule` at that line (a load, where a line also holds its type)."""
    hits = [f for f in found if f["path"] == path and f["line"] == line and f["rule"] == rule]
    loads = [f for f in hits if "Module" not in f["symbol"].rsplit("::", 1)[-1]]
    (hit,) = loads if len(hits) > 1 else hits
    return hit


def test_one_finding_per_runtime_use_and_none_elsewhere(repo):
    found = findings(scan(repo, "--format", "json", "--select", "MIG4", "."))
    got = {(f["path"], f["line"], f["rule"], f["symbol"]) for f in found}
    assert got == EXPECTED
    assert len(found) == len(EXPECTED)
    assert all(f["fix"] == "manual" for f in found)
    # Comments, strings and look-alikes (`cache::load`, `Settings.load`, Assets.kt) stay quiet.
    for path, line, _, _ in got:
        text = (repo / path).read_text(encoding="utf-8").splitlines()[line - 1]
        comment = ("//", "/*") if path.endswith((".cpp", ".mm", ".java", ".gradle")) else ("#",)
        assert not text.lstrip().startswith(comment), (path, line, text)
        assert "cache::load" not in text and "Settings.load" not in text
    # libtorch linked for tensor maths only (tools/): no MIG404.
    assert not any(f["path"].startswith("tools/") for f in found)


def test_native_loads_and_python_writers_are_linked(repo):
    found = findings(scan(repo, "--format", "json", "."))
    server = by_site(found, "server/main.cpp", 18, "MIG401")
    assert server["symbol"] == "torch::jit::load"
    assert "`model.pt` is written by export.py:20 (MIG201)" in server["message"]
    assert "executorch::extension::Module" in server["message"]
    assert "AOTIModelPackageLoader" in server["message"]
    android = by_site(found, ACTIVITY, 14, "MIG402")
    assert "`model.ptl` is written by export.py:22 (MIG204)" in android["message"]
    ios = by_site(found, "ios/App/TorchModule.mm", 16, "MIG403")
    assert "`model.ptl` is written by export.py:22 (MIG204)" in ios["message"]

    # The Python writers stay TorchScript while native code reads what they write.
    save = by_site(found, "export.py", 20, "MIG201")
    assert save["fix"] == "assisted"
    assert "loads `model.pt` (server/main.cpp:18 (MIG401)): it stays TorchScript" in save["message"]
    lite = by_site(found, "export.py", 22, "MIG204")  # assisted anyway: no example inputs
    assert f"{ACTIVITY}:14 (MIG402), ios/App/TorchModule.mm:16 (MIG403)" in lite["message"]
    # Only the loads carry the link; the other uses of the same file do not repeat it.
    linked = [f for f in found if "is written by" in f["message"]]
    assert {(f["path"], f["line"]) for f in linked} == {
        ("server/main.cpp", 18),
        (ACTIVITY, 14),
        ("ios/App/TorchModule.mm", 16),
    }


def test_cmake_finding_needs_the_projects_runtime_use(repo):
    # Named alone (pre-commit) the CMake file still finds its sources' runtime use on disk.
    found = findings(scan(repo, "--format", "json", "server/CMakeLists.txt"))
    assert [(f["line"], f["rule"]) for f in found] == [(5, "MIG404"), (9, "MIG404")]
    assert "this project's sources load TorchScript (server/main.cpp:3)" in found[0]["message"]
    quiet = scan(repo, "--format", "json", "tools/CMakeLists.txt")
    assert quiet.returncode == 0, quiet.stdout + quiet.stderr


def test_sarif_carries_the_native_findings(repo):
    proc = scan(repo, "--format", "sarif", "--select", "MIG4", ".")
    assert proc.returncode == 1, proc.stderr
    results = json.loads(proc.stdout)["runs"][0]["results"]
    assert len(results) == len(EXPECTED)
    assert {r["ruleId"] for r in results} == {"MIG401", "MIG402", "MIG403", "MIG404"}


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("a.cpp", '#include <torch/script.h>\nauto m = torch::jit::load("x.pt"); /* open'),
        ("a.cpp", 'auto s = R"delim(never closed'),
        ("A.kt", 'val s = """open\n/* /* nested */'),
        ("CMakeLists.txt", "#[[ open\nfind_package(Torch)"),
        ("Podfile", "pod 'LibTorch-Lite\n=begin\n"),
    ],
)
def test_unterminated_comments_and_strings_do_not_crash(name, text):
    lang = native_source.language(Path(name))
    assert lang is not None
    tokens = native_source.tokenize(text, lang)
    assert all(0 <= t.start < t.end <= len(text) for t in tokens)


def test_precommit_hooks_pass_the_native_files():
    import re

    import yaml

    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    pattern = re.compile(hooks[0]["files"])
    for path, *_ in EXPECTED:
        assert pattern.search(path), path
    assert not pattern.search("logo.png")


def test_report_groups_serving_code_with_its_python_writer(repo):
    env = {**os.environ, "NO_COLOR": "1", "MIGRATE_CACHE_DIR": str(repo.parent / "cache")}
    proc = subprocess.run(
        [sys.executable, "-m", "migrate", "report", ".", "--format", "markdown"],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode in (0, 1), proc.stderr
    section = proc.stdout.split("## Serving code outside Python (MIG4xx)", 1)[1]
    section = section.split("\n## ", 1)[0]
    assert "- `export.py:20` MIG201 writes `model.pt`: loaded by `server/main.cpp:18` (MIG401)" in (
        section
    )
    assert (
        f"- `export.py:22` MIG204 writes `model.ptl`: loaded by `{ACTIVITY}:14` (MIG402), "
        "`ios/App/TorchModule.mm:16` (MIG403)"
    ) in section
    assert "`server/CMakeLists.txt`" in section and "`ios/Podfile`" in section


def test_undecodable_native_files_without_runtime_words_are_no_error(tmp_path):
    # C++ files were never read before MIG4xx: a Latin-1 source or a binary header that
    # cannot hold a finding must not turn a clean scan into exit 2.
    (tmp_path / "legacy.cpp").write_bytes(b"// caf\xe9\nint main() { return 0; }\n")
    (tmp_path / "blob.h").write_bytes(b"\x00\x01\x02binary")
    proc = scan(tmp_path, "--format", "json", ".")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads(proc.stdout)["errors"] == []
