"""The rule files' parse kept in the cache folder (registry.rule_files): the same rules as
parsing the YAML, a start that finds it imports no PyYAML, and any change to a rule file,
a damaged cache file or a cache folder that cannot be written only costs a parse."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest
import yaml

from migrate import registry

YAML_IMPORTED = "import sys\nfrom migrate.registry import all_rules\nall_rules()\nprint('yaml' in sys.modules)\n"


def _yaml_imported(cache) -> bool:
    env_code = subprocess.run(
        [sys.executable, "-c", YAML_IMPORTED],
        capture_output=True,
        text=True,
        check=True,
        env={**_env(), "MIGRATE_CACHE_DIR": str(cache)},
    )
    return env_code.stdout.strip() == "True"


def _env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if k != "MIGRATE_CACHE_DIR"}


def test_the_second_start_reads_the_kept_parse_without_pyyaml(tmp_path):
    assert _yaml_imported(tmp_path)  # nothing kept yet: parsed, then kept
    assert list(tmp_path.glob("rules-*.json"))
    assert not _yaml_imported(tmp_path)


@pytest.fixture
def rules_copy(tmp_path, monkeypatch):
    folder = tmp_path / "rules"
    shutil.copytree(registry.rules_dir(), folder)
    monkeypatch.setattr(registry, "rules_dir", lambda: folder)
    monkeypatch.setenv("MIGRATE_CACHE_DIR", str(tmp_path / "cache"))
    return folder


def _parsed(folder) -> dict[str, dict]:
    return {
        str(p): yaml.safe_load(p.read_text(encoding="utf-8")) or {}
        for p in sorted(folder.glob("MIG*.yaml"))
    }


def test_kept_rules_are_the_parsed_rules(rules_copy):
    first = registry.rule_files()  # parsed and kept
    second = registry.rule_files()  # read back
    assert first == second == _parsed(rules_copy)


def test_an_edited_rule_file_is_parsed_again(rules_copy):
    registry.rule_files()
    path = rules_copy / "MIG101.yaml"
    path.write_text(path.read_text(encoding="utf-8") + "edited: here\n", encoding="utf-8")
    assert registry.rule_files()[str(path)]["edited"] == "here"
    assert len(list((rules_copy.parent / "cache").glob("rules-*.json"))) == 2


def test_a_damaged_kept_file_is_parsed_again_and_replaced(rules_copy):
    registry.rule_files()
    (kept,) = (rules_copy.parent / "cache").glob("rules-*.json")
    kept.write_text('{"MIG101.yaml": ', encoding="utf-8")
    assert registry.rule_files() == _parsed(rules_copy)
    assert registry.rule_files() == _parsed(rules_copy)
    assert kept.read_text(encoding="utf-8").startswith('{"MIG101.yaml": {')


def test_a_cache_folder_that_cannot_be_written_only_costs_a_parse(rules_copy, monkeypatch):
    blocker = rules_copy.parent / "not-a-folder"
    blocker.write_text("", encoding="utf-8")
    monkeypatch.setenv("MIGRATE_CACHE_DIR", str(blocker / "cache"))
    assert registry.rule_files() == _parsed(rules_copy)


@pytest.mark.parametrize("line", ["since: 2026-12-01\n", "counts: {1: one}\n"])
def test_data_json_cannot_give_back_is_parsed_every_time(rules_copy, line):
    # A YAML date has no JSON form, an integer key would come back a string: never kept.
    path = rules_copy / "MIG101.yaml"
    path.write_text(path.read_text(encoding="utf-8") + line, encoding="utf-8")
    assert registry.rule_files() == _parsed(rules_copy)
    assert registry.rule_files() == _parsed(rules_copy)
    assert not list((rules_copy.parent / "cache").glob("rules-*.json"))
