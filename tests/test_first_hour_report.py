"""The HTML plan (issue 30): cards that add up, short fix-safety texts with the long form one
click away, assisted items not introduced as "Unsafe: ...", and the page in a real browser."""

from __future__ import annotations

import html
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from migrate.report.plan import build_plan
from migrate.report.plan_html import render_html
from migrate.scan.engine import ScanOptions
from tests.scan_support import chromium

ROOT = Path(__file__).resolve().parent.parent
# A capture returned from its function: the trace, its save and its lowering need a person
# (MIG102's auto fix is unsafe; its fix safety starts "Unsafe: ...").
CAPTURE = """\
import torch
from torch.utils.mobile_optimizer import optimize_for_mobile


def export(model, x):
    traced = torch.jit.trace(model, x)
    torch.jit.save(traced, "model.pt", _extra_files={"meta": "1"})
    mobile = optimize_for_mobile(traced)
    mobile._save_for_lite_interpreter("model.ptl")
    return traced
"""


@pytest.fixture
def page(tmp_path: Path) -> str:
    repo = tmp_path / "plan"
    shutil.copytree(ROOT / "fixtures" / "repos" / "plan", repo)
    (repo / "pkg" / "capture.py").write_text(CAPTURE, encoding="utf-8")
    plan = build_plan(str(repo), ScanOptions(use_git=False))
    return render_html(plan)


def cards(text: str) -> dict[str, str]:
    found = re.findall(r'<div class="n">(.*?)</div><div class="k">(.*?)</div>', text)
    return {html.unescape(k): html.unescape(v) for v, k in found}


def test_cards_add_up_to_the_findings(page):
    c = cards(page)
    total = int(c.get("findings") or c["finding"])
    parts = ["fixed by migrate apply", "for a person", "CUDA 12.8 (MIG3xx), fixed or not"]
    assert sum(int(c[k]) for k in parts) == total, c
    assert int(c["CUDA 12.8 (MIG3xx), fixed or not"]) >= 2  # the fixture's CUDA fixes
    assert int(c["fixed by migrate apply"]) >= 1
    assert f"{total} findings = " in html.unescape(page)


def test_apply_section_counts_fixes_in_the_cards_terms(page):
    # The apply section also counts the CUDA fixes: it says how many of each, so the page
    # never shows "4 fixed" in a card and "6 fixed" below it without saying why.
    fixed = int(cards(page)["fixed by migrate apply"])
    said = re.search(r"<p>(\d+) findings? fixed \((\d+) TorchScript, (\d+) CUDA 12.8\) in", page)
    assert said is not None, page
    total, torchscript, cuda = map(int, said.groups())
    assert torchscript == fixed and cuda >= 2 and total == torchscript + cuda


def test_intent_line_renders_its_code_spans(page):
    line = re.search(r'<p class="intent">(.*?)</p>', page).group(1)
    assert "<code>--intent drop</code>" in line and "`" not in line, line


def _sections(page: str) -> dict[str, str]:
    """Each review section of the page by rule code."""
    review = page.split("<h2>Items for a person</h2>", 1)[1].split("<h2>", 1)[0]
    return {
        m.group(1): m.group(0)
        for m in re.finditer(r"<details open><summary><h3[^>]*>(MIG\d+).*?</ul></details>", review)
    }


def test_assisted_items_are_not_introduced_as_unsafe_fixes(page):
    sections = _sections(page)
    assert "MIG102" in sections and "MIG201" in sections
    for code, section in sections.items():
        statuses = set(re.findall(r'<span class="pill (\w[\w ,]*)">', section))
        if not statuses & {"unapplied"}:  # no automatic fix in question
            assert "<b>Fix safety.</b>" not in section, code
        assert "<b>Fix safety.</b> Unsafe" not in section or "unapplied" in statuses, code
    # The long form is one click away, collapsed.
    mig102 = sections["MIG102"]
    assert "<details class=more>" in mig102
    assert "Unsafe: export specialises shapes" in mig102.split("<details class=more>", 1)[1]


def test_shown_fix_safety_is_the_short_form(page):
    for text in re.findall(r"<p><b>Fix safety\.</b> (.*?)</p>", page):
        assert len(html.unescape(re.sub("<[^>]+>", "", text))) <= 500, text


def _png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


def test_screenshot_of_the_plan(page, tmp_path):
    browser = chromium()
    path = tmp_path / "plan.html"
    path.write_text(page, encoding="utf-8")
    shot = Path(os.environ.get("MIGRATE_SCREENSHOT_DIR") or tmp_path) / "first-hour-plan.png"
    proc = subprocess.run(
        [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1280,2400",
         f"--screenshot={shot}", path.as_uri()],
        capture_output=True,
        timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0 and shot.is_file(), proc.stderr.decode(errors="replace")[-2000:]
    assert _png_size(shot.read_bytes()) == (1280, 2400)
    assert shot.stat().st_size > 50_000  # a rendered page, not a blank one
