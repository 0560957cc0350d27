"""`migrate report`: the plan's numbers on a fixture repository, and the HTML page in a real
headless browser."""

from __future__ import annotations

import os
import re
import shutil
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from migrate.report.plan import build_plan, hours
from migrate.report.plan_html import bar_chart, render_html
from migrate.report.plan_markdown import render_markdown
from migrate.scan.engine import ScanOptions
from tests.scan_support import chromium

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "fixtures" / "repos" / "plan"
# Rules whose fixes are settled, so the numbers below are exact (new rules do not move them).
CODES = ["MIG104", "MIG105", "MIG110", "MIG111", "MIG117", "MIG119", "MIG301", "MIG304"]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    shutil.copytree(FIXTURE, tmp_path / "plan")
    return tmp_path / "plan"


@pytest.fixture
def plan(repo: Path):
    return build_plan(str(repo), ScanOptions(select=CODES, use_git=False))


def test_plan_numbers(plan, repo):
    assert plan.files_scanned == 8
    assert len(plan.findings) == 9
    assert dict(plan.by_rule) == {
        "MIG104": 1,
        "MIG105": 1,
        "MIG110": 1,
        "MIG111": 2,
        "MIG117": 1,
        "MIG119": 1,
        "MIG301": 1,
        "MIG304": 1,
    }
    assert plan.by_rule[0] == ("MIG111", 2)
    assert plan.by_folder == [("pkg", 3), ("pkg/ops", 3), (".", 1), ("docker", 1), ("tools", 1)]
    assert plan.by_fix == {"auto": 6, "assisted": 1, "manual": 2}
    # What apply would do: a dry run, nothing written.
    changes = {Path(c.path).relative_to(repo).as_posix(): c for c in plan.changes}
    assert {k: (c.findings, c.added, c.removed, c.rules) for k, c in changes.items()} == {
        "docker/Dockerfile": (1, 1, 1, ["MIG304"]),
        "pkg/model.py": (2, 0, 3, ["MIG104", "MIG110"]),
        "pkg/ops/fused.py": (2, 2, 2, ["MIG111"]),
        "requirements.txt": (1, 1, 1, ["MIG301"]),
    }
    assert plan.applied_total == 6
    assert (repo / "pkg" / "model.py").read_text() == (FIXTURE / "pkg" / "model.py").read_text()
    # Items for a person, with the rule's guidance; CUDA findings in their own list.
    assert {code: [i.status for i in items] for code, items in plan.review.items()} == {
        "MIG105": ["assisted"],
        "MIG117": ["manual"],
        "MIG119": ["manual"],
    }
    assert [(i.finding.rule, i.status) for i in plan.cuda] == [
        ("MIG304", "auto"),
        ("MIG301", "auto"),
    ]
    # Effort: 6 auto x 2 + 1 assisted x 15 + 2 manual x 45 + 2 changed Python files x 5.
    assert [(e.label.split(" ")[0], e.count, e.minutes) for e in plan.effort] == [
        ("auto", 6, 12),
        ("assisted", 1, 15),
        ("manual", 2, 90),
        ("run", 2, 10),
    ]
    assert plan.effort_minutes == 127
    assert hours(plan.effort_minutes) == "2.5 h"


def test_hours():
    assert [hours(m) for m in (0, 45, 60, 61, 90, 91, 600)] == [
        "0 min",
        "45 min",
        "1 h",
        "1.5 h",
        "1.5 h",
        "2 h",
        "10 h",
    ]


def test_markdown(plan):
    md = render_markdown(plan)
    assert "- Files scanned: 8\n" in md
    assert "- Findings: 9 in 5 files\n" in md
    # Fixed + for a person + CUDA add up to the findings (the CUDA fixes count once, there).
    assert "- Fixed automatically by `migrate apply`: 4\n" in md
    assert "- Left for a person (assisted, manual, auto not applied): 3\n" in md
    assert "- CUDA 12.8 findings (MIG3xx, fixed or not): 2\n" in md
    assert "- Rough effort: 2.5 h\n" in md
    assert "| MIG111 | jit-annotate | auto | 2 |" in md
    assert "| pkg/ops | 3 |" in md
    assert "| manual | 2 |" in md
    assert "### MIG117 jit-interface (1)" in md
    assert "**Use instead.**" in md
    assert "| **Total** |  |  | **127** (≈ 2.5 h) |" in md


def test_report_command_markdown_and_html(repo, tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    args = [sys.executable, "-m", "migrate", "report", "plan", "--select", ",".join(CODES)]
    proc = subprocess.run(args, cwd=repo.parent, capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("# Migration plan: plan\n")
    assert "| plan/pkg/model.py | 2 | 0 | 3 | MIG104, MIG110 |" in proc.stdout
    out = tmp_path / "plan.html"
    proc = subprocess.run(
        [*args, "--format", "html", "-o", str(out)],
        cwd=repo.parent,
        capture_output=True,
        text=True,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    assert out.read_text().startswith("<!DOCTYPE html>")
    proc = subprocess.run(
        [*args, "--format", "pdf"], cwd=repo.parent, capture_output=True, text=True
    )
    assert proc.returncode == 2
    assert "--format must be one of markdown, html" in proc.stderr


def test_html_is_self_contained(plan):
    page = render_html(plan)
    assert page.count("<svg") == 2
    assert "<script" not in page and "<link" not in page and "@import" not in page
    # No external assets: nothing is loaded from anywhere (URLs in messages are only text).
    assert not re.search(r"\b(src|href)\s*=", page)
    assert "url(" not in page
    assert "https://download.pytorch.org/whl/cu128" in page  # MIG301's message, as text
    assert ">MIG111 jit-annotate</text>" in page
    assert 'class="n">2.5 h<' in page


def test_bar_chart_groups_the_tail():
    rows = [(f"folder{i}", 20 - i) for i in range(20)]
    svg = bar_chart(rows, "t", limit=5)
    assert svg.count("<rect") == 6
    assert ">15 more</text>" in svg
    assert f">{sum(20 - i for i in range(5, 20))}</text>" in svg
    assert "No findings" in bar_chart([], "t")


def _png_rows(data: bytes) -> tuple[int, int, set[bytes]]:
    """Width, height and the distinct (filtered) scanlines of a PNG, without Pillow."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width, height = 8, b"", 0, 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos : pos + 8])
        body = data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            width, height = struct.unpack(">II", body[:8])
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = len(raw) // height
    return width, height, {raw[i * stride : (i + 1) * stride] for i in range(height)}


def test_html_renders_in_headless_chromium(plan, tmp_path):
    browser = chromium()
    page = tmp_path / "plan.html"
    page.write_text(render_html(plan), encoding="utf-8")
    shot = tmp_path / "plan.png"
    proc = subprocess.run(
        [
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            f"--user-data-dir={tmp_path / 'profile'}",
            "--window-size=1280,1400",
            f"--screenshot={shot}",
            page.as_uri(),
        ],
        capture_output=True,
        timeout=120,
    )
    assert proc.returncode == 0 and shot.is_file(), proc.stderr.decode(errors="replace")[-2000:]
    width, height, rows = _png_rows(shot.read_bytes())
    assert (width, height) == (1280, 1400)
    # A blank or error page has a handful of distinct scanlines; the plan has hundreds.
    assert len(rows) > 200
    assert shot.stat().st_size > 30_000
