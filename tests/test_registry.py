"""The rule catalogue: one code, one YAML file, one check module, one fixture folder; names
kebab-case; required keys present; every catalogued API maps to the rule the issue names.

Failures list everything missing at once, so a gap is named rather than hidden."""

from __future__ import annotations

import importlib
import pkgutil
import re
from pathlib import Path

import pytest
import yaml

from migrate import checks as checks_package
from migrate.checks import check_classes
from migrate.checks.base import Check, PythonCheck, TextCheck
from migrate.registry import all_rules, rules_dir
from migrate.scan.checkset import CheckSet

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures" / "rules"
CODE = re.compile(r"^MIG\d{3}$")
KEBAB = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)+$")
REQUIRED_TEXT = ("title", "what", "why", "use_instead", "fix_safety")

RULES = all_rules()


def yaml_files() -> dict[str, dict]:
    return {
        p.stem: yaml.safe_load(p.read_text(encoding="utf-8")) for p in rules_dir().glob("*.yaml")
    }


def check_modules() -> dict[str, list[type]]:
    """Every migrate/checks/mig*.py module -> the Check subclasses it defines."""
    out = {}
    for info in pkgutil.iter_modules(checks_package.__path__):
        if not info.name.startswith("mig"):
            continue
        module = importlib.import_module(f"migrate.checks.{info.name}")
        out[info.name] = [
            obj
            for obj in vars(module).values()
            if isinstance(obj, type)
            and issubclass(obj, Check)
            and obj.__module__ == module.__name__
            and getattr(obj, "code", "")
        ]
    return out


def test_codes_are_unique_and_well_formed():
    files = sorted(p.stem for p in rules_dir().glob("*.yaml"))
    assert files, "no rules found"
    bad_names = [f for f in files if not CODE.match(f)]
    assert not bad_names, f"rule files not named MIGnnn.yaml: {bad_names}"
    codes = [data.get("code") for data in yaml_files().values()]
    assert len(codes) == len(set(codes))
    mismatched = [stem for stem, data in yaml_files().items() if data.get("code") != stem]
    assert not mismatched, f"code differs from the file name: {mismatched}"
    class_codes = [cls.code for classes in check_modules().values() for cls in classes]
    dupes = sorted({c for c in class_codes if class_codes.count(c) > 1})
    assert not dupes, f"codes implemented by more than one check: {dupes}"


def test_every_rule_has_a_check_and_every_check_has_a_rule():
    classes = check_classes()
    without_check = sorted(set(RULES) - set(classes))
    without_yaml = sorted(set(classes) - set(RULES))
    assert not without_check and not without_yaml, (
        f"rules without a check module: {without_check}; checks without rules/*.yaml: {without_yaml}"
    )


def test_check_modules_follow_the_naming_scheme():
    problems = []
    for name, classes in check_modules().items():
        match = re.match(r"^mig(\d{3})_[a-z0-9]+(_[a-z0-9]+)*$", name)
        if not match:
            problems.append(f"{name}: not mig<nnn>_<snake_slug>")
            continue
        if len(classes) != 1:
            problems.append(f"{name}: {len(classes)} check classes (one expected)")
            continue
        if classes[0].code != f"MIG{match.group(1)}":
            problems.append(f"{name}: defines {classes[0].code}")
    assert not problems, "\n".join(problems)


def test_targets_match_check_kinds():
    problems = []
    for code, cls in check_classes().items():
        rule = RULES.get(code)
        if rule is None:
            continue
        expected = {"python": PythonCheck, "text": TextCheck}.get(rule.target)
        if expected is None:
            problems.append(f"{code}: target {rule.target!r} is neither python nor text")
        elif not issubclass(cls, expected):
            problems.append(
                f"{code}: target {rule.target} but {cls.__name__} is not a {expected.__name__}"
            )
    assert not problems, "\n".join(problems)


def test_required_yaml_keys():
    problems = []
    for stem, data in sorted(yaml_files().items()):
        for key in ("code", "name", "fix", "target", *REQUIRED_TEXT):
            value = data.get(key)
            if not isinstance(value, str) or not value.strip():
                problems.append(f"{stem}: `{key}` missing or empty")
        if data.get("fix") not in ("auto", "assisted", "manual"):
            problems.append(f"{stem}: fix must be auto, assisted or manual")
        example = data.get("example")
        # `after` may be empty (a fix that deletes the statement) but must be there.
        if not (
            isinstance(example, dict)
            and isinstance(example.get("before"), str)
            and example["before"].strip()
            and isinstance(example.get("after", None), str)
        ):
            problems.append(f"{stem}: `example` needs a non-empty `before` and an `after`")
        symbols = data.get("symbols", [])
        if not isinstance(symbols, list) or not all(isinstance(s, str) for s in symbols):
            problems.append(f"{stem}: `symbols` must be a list of strings")
        else:
            # Framework wrappers (issue 19) list their own APIs under the roots they declare.
            roots = ("torch", *(data.get("frameworks") or ()))
            outside = [s for s in symbols if s.split(".")[0] not in roots]
            if outside:
                problems.append(f"{stem}: symbols outside torch and its frameworks: {outside}")
    assert not problems, "\n".join(problems)


def test_names_are_kebab_case_and_unique():
    names = {code: rule.name for code, rule in RULES.items()}
    bad = {code: name for code, name in names.items() if not KEBAB.match(name)}
    assert not bad, f"names not kebab-case: {bad}"
    values = list(names.values())
    assert len(values) == len(set(values)), "two rules share a name"


def test_every_rule_has_a_fixture_folder_with_cases():
    missing, empty, no_findings = [], [], []
    for code in sorted(RULES):
        folder = FIXTURES / code
        if not folder.is_dir():
            missing.append(code)
            continue
        befores = sorted(folder.glob("*.before.*"))
        if not befores:
            empty.append(code)
        for before in befores:
            case = before.name.split(".before.", 1)[0]
            if not (folder / f"{case}.findings.txt").exists():
                no_findings.append(f"{code}/{case}")
    orphans = sorted(
        p.name
        for p in FIXTURES.iterdir()
        if p.is_dir() and not p.name.startswith(".") and p.name not in RULES
    )
    assert not (missing or empty or no_findings or orphans), (
        f"no fixture folder: {missing}\nfolder without a *.before.* case: {empty}\n"
        f"case without .findings.txt: {no_findings}\nfolders for unknown codes: {orphans}"
    )


def test_exact_symbols_belong_to_one_rule():
    owners: dict[str, list[str]] = {}
    for code, rule in RULES.items():
        for symbol in rule.symbols:
            if "*" not in symbol:
                owners.setdefault(symbol, []).append(code)
    shared = {s: c for s, c in owners.items() if len(c) > 1}
    assert not shared, f"symbols claimed by several rules: {shared}"
    # ...and the engine dispatches each to its owner (no pattern of another rule steals it).
    checks = CheckSet(sorted(RULES))
    stolen = {
        s: (c[0], found.code if found else None)
        for s, c in owners.items()
        if (found := checks.for_symbol(s)) is None or found.code != c[0]
    }
    assert not stolen, f"symbol -> (owner, dispatched to): {stolen}"


# The catalogue of issue 2: each API family and the rule that must report it.
CATALOGUE = {
    "torch.jit.script": "MIG101",
    "torch.jit.trace": "MIG102",
    "torch.jit.trace_module": "MIG103",
    "torch.jit.save": "MIG201",
    "torch.jit.ScriptModule.save": "MIG201",
    "torch.jit.load": "MIG202",
    "torch.jit.freeze": "MIG116",
    "torch.jit.optimize_for_inference": "MIG116",
    "torch.jit.ignore": "MIG104",
    "torch.jit.unused": "MIG104",
    "torch.jit.export": "MIG105",
    "torch.jit.script_method": "MIG106",
    "torch.jit.script_if_tracing": "MIG107",
    "torch.jit.ScriptModule": "MIG109",
    "torch.jit.ScriptFunction": "MIG109",
    "torch.jit.TracedModule": "MIG109",
    "torch.jit.RecursiveScriptModule": "MIG109",
    "torch.jit.annotate": "MIG111",
    "torch.jit.Final": "MIG112",
    "torch.jit.Attribute": "MIG113",
    "torch.jit.isinstance": "MIG114",
    "torch.jit.is_scripting": "MIG110",
    "torch.jit.is_tracing": "MIG110",
    "torch.jit.fork": "MIG115",
    "torch.jit.wait": "MIG115",
    "torch.jit.interface": "MIG117",
    "torch.jit._overload": "MIG108",
    "torch.jit._overload_method": "MIG108",
    "torch.jit.TracerWarning": "MIG118",
    "torch.utils.mobile_optimizer.optimize_for_mobile": "MIG203",
    "torch.jit.ScriptModule._save_for_lite_interpreter": "MIG204",
    "torch.jit._load_for_lite_interpreter": "MIG205",
    "torch.jit.mobile._load_for_lite_interpreter": "MIG205",
    "torch.jit._state.disable": "MIG119",
    "torch.jit._script.RecursiveScriptModule": "MIG109",
    "torch._C._jit_pass_inline": "MIG119",
    "torch.jit.get_trace_graph": "MIG120",
    "torch.jit.CompilationUnit": "MIG120",
    "detectron2.export.scripting_with_instances": "MIG141",
    "detectron2.export.TracingAdapter": "MIG141",
    "timm.layers.set_scriptable": "MIG144",
    "timm.models.layers.set_scriptable": "MIG144",
    "timm.layers.config.set_scriptable": "MIG144",
}


@pytest.mark.parametrize("symbol", sorted(CATALOGUE))
def test_catalogue_symbol_dispatch(symbol):
    expected = CATALOGUE[symbol]
    assert RULES[expected].matches_symbol(symbol) or expected in ("MIG119", "MIG120")
    found = CheckSet(sorted(RULES)).for_symbol(symbol)
    assert found is not None and found.code == expected


@pytest.mark.parametrize(
    "symbol", ["torch.jit", "torch.compile", "torch.export.export", "torch.nn.Module"]
)
def test_non_torchscript_symbols_are_not_dispatched(symbol):
    assert CheckSet(sorted(RULES)).for_symbol(symbol) is None
