"""CUDA 12.8 rules (MIG3xx): target selection, fix kinds, file kinds, precision."""

from __future__ import annotations

from pathlib import Path, PurePosixPath

import pytest

from migrate.checks import check_classes
from migrate.checks._cuda import NOTE, file_kind, new_version
from migrate.findings import FixKind
from migrate.registry import all_rules
from migrate.scan.file_analysis import check_source
from tests.fixture_cases import RULE_FIXTURES, all_cases, read

CODES = sorted(c for c in all_rules() if c.startswith("MIG3"))
ALL = CODES


def findings(text: str, path: str, cuda: str = "13.0"):
    return check_source(text, ALL, path=path, options={"cuda": cuda})


def test_every_code_has_yaml_module_and_fixtures_with_a_negative():
    assert CODES == [f"MIG30{i}" for i in range(1, 9)]
    classes = check_classes()
    for code in CODES:
        assert code in classes
        folder = RULE_FIXTURES / code
        cases = [c for c in all_cases(code)]
        assert cases, code
        assert folder.is_dir() and (Path(all_rules()[code].code) and cases)
        negatives = [c for c in cases if check_source(read(c.before), [code], c.checked_as) == []]
        assert negatives, f"{code} has no negative case (a realistic file with nothing to report)"


@pytest.mark.parametrize("case", all_cases("MIG3"), ids=str)
def test_fixture_findings_carry_the_note_and_edits_match_the_fix_kind(case):
    for f in check_source(read(case.before), [case.code], path=case.checked_as):
        assert NOTE in f.message
        assert "580" in f.message and "pre-Turing" in f.message
        edits = f.autofix.edits if f.autofix else ()
        if f.fix is FixKind.AUTO:
            assert len(edits) == 1, f
            edit = edits[0]
            # Only the changed token is replaced: short spans on one line.
            assert "\n" not in read(case.before)[edit.start : edit.end]
        else:
            assert f.fix is FixKind.ASSISTED and not edits, f


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("requirements.txt", "requirements"),
        ("requirements-gpu.txt", "requirements"),
        ("requirements/cuda.txt", "requirements"),
        ("constraints.txt", "requirements"),
        ("requirements.in", "requirements"),
        ("MANIFEST.in", None),
        ("CMakeLists.txt", "cmake"),
        ("cmake/cuda.cmake", "cmake"),
        ("notes.txt", None),
        ("pyproject.toml", "toml"),
        ("pixi.toml", "toml"),
        ("setup.cfg", "cfg"),
        ("setup.py", "setup_py"),
        ("pkg/util.py", "python"),
        ("Dockerfile", "docker"),
        ("Containerfile", "docker"),
        ("docker/Dockerfile.gpu", "docker"),
        ("gpu.dockerfile", "docker"),
        (".github/workflows/ci.yml", "yaml"),
        (".gitlab-ci.yml", "yaml"),
        ("environment-gpu.yaml", "yaml"),
        ("scripts/install.sh", "shell"),
        ("Makefile", "make"),
        ("rules.mk", "make"),
        ("README.md", None),
    ],
)
def test_file_kind(name, kind):
    assert file_kind(PurePosixPath(name)) == kind


def test_new_version():
    assert new_version("12.8", "13.0") == "13.0"
    assert new_version("12.8.1", "13.0") == "13.0.0"
    assert new_version("12.8.*", "13.2") == "13.2.*"


def _fix(text: str, path: str, cuda: str) -> str:
    from migrate.fix.tidy import fix_source
    from migrate.plan.units import WITH_UNSAFE

    return fix_source(path, text, lambda t: findings(t, path, cuda), allowed=WITH_UNSAFE).fixed


def test_cuda_13_2_targets():
    req = "--index-url https://download.pytorch.org/whl/cu128\ntorch>=2.12\nnvidia-nccl-cu12\n"
    assert _fix(req, "requirements.txt", "13.2") == (
        "--index-url https://download.pytorch.org/whl/cu132\ntorch>=2.12\nnvidia-nccl-cu13\n"
    )
    docker = (
        "FROM nvidia/cuda:12.8.1-cudnn-devel-ubuntu24.04\n"
        "FROM nvidia/cuda:12.8.1-cudnn-devel-ubuntu22.04\n"
        "ENV CUDA_VERSION=12.8.1 CUDA_HOME=/usr/local/cuda-12.8\n"
        "RUN apt-get install -y cuda-nvcc-12-8\n"
    )
    assert _fix(docker, "Dockerfile", "13.2") == (
        "FROM nvidia/cuda:13.2.0-cudnn-devel-ubuntu24.04\n"
        # cuDNN images on ubuntu22.04 are not known for 13.2: left, reported as assisted.
        "FROM nvidia/cuda:12.8.1-cudnn-devel-ubuntu22.04\n"
        "ENV CUDA_VERSION=13.2.0 CUDA_HOME=/usr/local/cuda-13.2\n"
        "RUN apt-get install -y cuda-nvcc-13-2\n"
    )
    kinds = {f.rule: f.fix for f in findings(docker, "Dockerfile", "13.2") if f.line == 2}
    assert kinds == {"MIG304": FixKind.ASSISTED}
    # torch 2.9.1 has cu130 wheels but no cu132 ones.
    pin = "torch==2.9.1+cu128\n"
    assert _fix(pin, "requirements.txt", "13.0") == "torch==2.9.1+cu130\n"
    assert _fix(pin, "requirements.txt", "13.2") == pin
    assert "has no cu132 wheels" in findings(pin, "requirements.txt", "13.2")[0].message


def test_torch_version_cuda_message_names_the_target():
    src = 'import torch\nok = torch.version.cuda == "12.8"\n'
    (f,) = findings(src, "mod.py", "13.2")
    assert f.rule == "MIG308" and '"13.2"' in f.message and f.fix is FixKind.ASSISTED


NEGATIVES = {
    "requirements.txt": "numpy==1.12.8\nscipy>=1.12.8\ntorch==2.9.1+cu126\n# cu128 wheels: https://download.pytorch.org/whl/cu128\n",
    "Dockerfile": (
        "FROM python:3.12.8-slim\n# FROM nvidia/cuda:12.8.1-devel-ubuntu22.04\n"
        "ENV PYTHON_VERSION=3.12.8 SCALE=12.8\nLABEL version=12.8.0\n"
        "RUN echo 'resize 12.8 MB' && ./run --lat 12.8 --lon 45.1\n"
    ),
    "ci.yml": (
        "env:\n  IMAGE_SIZE: 12.8\n  DATE: 2024.12.8\njobs:\n  t:\n    strategy:\n"
        "      matrix:\n        python-version: ['3.11', '3.12.8']\n        scale: [12.8, 6.4]\n"
        "    steps:\n      - run: ./bench --threshold 12.8\n"
    ),
    "environment.yml": "dependencies:\n  - python=3.12.8\n  - numpy=1.12.8\n  - cuda-version=13.0\n",
    "pyproject.toml": '[project]\nversion = "12.8.0"\nrequires-python = ">=3.12.8"\ndependencies = ["numpy==1.12.8"]\n',
    "setup.py": 'from setuptools import setup\n\nsetup(version="12.8.0", install_requires=["numpy==1.12.8"])\n',
    "install.sh": "#!/bin/sh\nWIDTH=12.8\nexport PYTHON=3.12.8\n# export CUDA_HOME=/usr/local/cuda-12.8\n",
    "Makefile": "VERSION = 12.8.0\nSCALE ?= 12.8\n",
    "CMakeLists.txt": "project(x VERSION 12.8.0)\nfind_package(CUDAToolkit 12.8 REQUIRED)\nset(CMAKE_CUDA_ARCHITECTURES 75 80 86)\n",
    "util.py": (
        "import torch\nfrom packaging import version\n\nSCALE = 12.8\n"
        'ok = version.parse(torch.version.cuda) >= version.parse("12.8")\n'
        "# torch.version.cuda == '12.8' was the old test; /usr/local/cuda-12.8\n"
    ),
}


@pytest.mark.parametrize("path", sorted(NEGATIVES))
def test_precision_negatives(path):
    assert findings(NEGATIVES[path], path) == []


def test_repo_fixture_exists():
    assert (Path(RULE_FIXTURES).parent / "repos" / "cuda_mix" / "before").is_dir()


@pytest.mark.parametrize("case", all_cases("MIG3"), ids=str)
def test_prefilter_lets_every_fixture_finding_through(case):
    """The cheap prefilter must never hide a file that has findings (the scan skips it)."""
    import re

    check = check_classes()[case.code]
    text = read(case.before)
    if check_source(text, [case.code], path=case.checked_as):
        words = check.prefilter if isinstance(check.prefilter, tuple) else (check.prefilter,)
        assert any(re.search(w, text) for w in words), case
