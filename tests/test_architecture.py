"""The layout's rules, checked on the source (docs/architecture.md, "Allowed imports").

Arrows between packages only where the table in docs/architecture.md allows them, no import
cycle between modules, no module over 400 lines and no function over 80, every name one package
imports from another on that package's face, and at least 90% of public functions, classes and
methods documented. Imports under ``if TYPE_CHECKING:`` never run and are not arrows.
"""
from __future__ import annotations

import ast
import importlib
import re
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 80
MIN_DOCUMENTED = 0.90
SUB_PACKAGES = sorted(p.name for p in (ROOT / "harness").iterdir()
                      if p.is_dir() and (p / "__init__.py").exists())


def source_files() -> dict[str, Path]:
    """Every project module by dotted name (the shipped data's builder scripts excluded)."""
    paths = [p for p in (ROOT / "harness").rglob("*.py") if "data" not in p.relative_to(ROOT).parts]
    for package in ("graphs", "store", "ui"):
        paths += (ROOT / package).glob("*.py")
    paths.append(ROOT / "app.py")
    return {".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__"): p for p in paths}


MODULES = source_files()
TREES = {name: ast.parse(path.read_text(encoding="utf-8")) for name, path in MODULES.items()}


def unit(module: str) -> str:
    """The package a module belongs to in the table: a harness sub-package, ``config``,
    ``compose`` or ``face`` for harness's root modules, else the top-level name."""
    parts = module.split(".")
    return parts[1] if parts[0] == "harness" and len(parts) > 1 else parts[0]


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
        (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def imported_names(tree: ast.AST) -> list[tuple[str, str | None]]:
    """(module, name) of every import that runs, function-local ones included."""
    found: list[tuple[str, str | None]] = []

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _type_checking(child):
                for other in child.orelse:
                    visit(other)
                continue
            if isinstance(child, ast.Import):
                found.extend((a.name, None) for a in child.names)
            elif isinstance(child, ast.ImportFrom) and child.level == 0 and child.module:
                found.extend((child.module, a.name) for a in child.names)
            visit(child)
    visit(tree)
    return found


def project_imports(module: str) -> set[str]:
    """The project modules ``module`` imports (``from pkg import submodule`` included)."""
    out = set()
    for target, name in imported_names(TREES[module]):
        if name and f"{target}.{name}" in MODULES:
            out.add(f"{target}.{name}")
        elif target in MODULES:
            out.add(target)
    out.discard(module)
    return out


def allowed_table() -> dict[str, set[str]]:
    """docs/architecture.md's "Allowed imports" table: package -> what it may import."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = text.split("## Allowed imports", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| *([a-z_]+) *\| *([^|]*?) *\|$", section, re.M)
    table = {name: {x.strip() for x in allowed.split(",") if x.strip() not in ("", "-")}
             for name, allowed in rows if name != "package"}
    assert len(table) >= 10, "the table in docs/architecture.md was not found"
    return table


TABLE = allowed_table()


def test_the_table_names_every_package_and_is_one_way():
    assert set(SUB_PACKAGES) | {"config", "compose", "graphs", "store", "ui", "app"} <= set(TABLE)
    graph = {a: {b for b in allowed if "." not in b} for a, allowed in TABLE.items()}
    assert not _cycles(graph), f"the allowed directions form a cycle: {_cycles(graph)}"


def test_imports_between_packages_follow_the_table():
    wrong = []
    for module in MODULES:
        source = unit(module)
        for target in project_imports(module):
            dest = unit(target)
            if dest == source or (dest == "face" and module in {f"harness.{p}" for p in SUB_PACKAGES}):
                continue
            allowed = TABLE.get(source, set())
            named = target.removeprefix("harness.") in allowed
            if dest not in allowed and not named:
                wrong.append(f"{module} -> {target} ({source} may import: {', '.join(sorted(allowed)) or 'nothing'})")
    assert not wrong, "imports against docs/architecture.md:\n" + "\n".join(sorted(wrong))


def test_the_name_tables_config_reads_never_lead_back_to_config():
    for entry in (x for allowed in TABLE.values() for x in allowed if "." in x):
        module = f"harness.{entry}"
        assert module in MODULES, f"docs/architecture.md names {module}, which does not exist"
        seen, todo = set(), [module]
        while todo:
            for target in project_imports(todo.pop()) - seen:
                seen.add(target)
                todo.append(target)
        assert "harness.config" not in seen and "harness.compose" not in seen, \
            f"{module} is read while a config is validated, so it must not import config"


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))
    for v in list(graph):
        if v not in index:
            connect(v)
    return found


def test_no_import_cycle_between_modules():
    graph = {m: {t for t in project_imports(m) if MODULES[t].name != "__init__.py"} for m in MODULES}
    assert not _cycles(graph)


def test_modules_and_functions_stay_small():
    long_modules = {m: n for m, p in MODULES.items()
                    if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES}
    long_functions = [f"{m}:{node.name} ({node.end_lineno - node.lineno + 1} lines)"
                      for m, tree in TREES.items() for node in ast.walk(tree)
                      if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                      and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES]
    assert not long_modules, f"modules over {MAX_MODULE_LINES} lines: {long_modules}"
    assert not long_functions, f"functions over {MAX_FUNCTION_LINES} lines: {long_functions}"


def public_definitions(tree: ast.Module):
    """Public top-level functions and classes, and the public methods of public classes."""
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and not node.name.startswith("_"):
            yield node
            if isinstance(node, ast.ClassDef):
                yield from (m for m in node.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))
                            and not m.name.startswith("_"))


def test_public_functions_classes_and_methods_are_documented():
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    missing = []
    for module, tree in TREES.items():
        for node in public_definitions(tree):
            documented = ast.get_docstring(node) is not None
            counts[unit(module)][0] += documented
            counts[unit(module)][1] += 1
            if not documented:
                missing.append(f"{module}:{node.name}")
    documented, total = (sum(c[i] for c in counts.values()) for i in (0, 1))
    assert documented / total >= MIN_DOCUMENTED, (
        f"{documented}/{total} documented ({documented / total:.0%}); undocumented: {missing}")


@pytest.mark.parametrize("package", SUB_PACKAGES)
def test_every_sub_package_has_a_readme_and_a_face(package):
    folder = ROOT / "harness" / package
    readme = (folder / "README.md").read_text(encoding="utf-8")
    assert "May import" in readme, f"harness/{package}/README.md should say what it may import"
    assert ast.get_docstring(TREES[f"harness.{package}"]), f"harness/{package}/__init__.py needs a docstring"
    face = importlib.import_module(f"harness.{package}")
    for name in getattr(face, "__all__", []):
        assert getattr(face, name) is not None, f"harness.{package}.{name} does not resolve"


def test_what_other_packages_import_is_on_the_face():
    missing = []
    for module, tree in TREES.items():
        for target, name in imported_names(tree):
            parts = target.split(".")
            if len(parts) < 3 or parts[0] != "harness" or parts[1] not in SUB_PACKAGES:
                continue
            if unit(module) == parts[1] or name is None or name.startswith("_"):
                continue
            if f"harness.{parts[1]}.{name}" in MODULES:
                continue  # a submodule of the package (or a name spelled like one)
            face = importlib.import_module(f"harness.{parts[1]}")
            if name not in getattr(face, "__all__", ()):
                missing.append(f"{module} imports {target}.{name}")
    assert not missing, "names used across packages but missing from the face:\n" + "\n".join(missing)


def test_the_judges_response_schemas_carry_no_docstring():
    """A verdict class's docstring would become the JSON schema's description, which is sent to
    the judge with every call: documenting one would change the prompt (and need a new prompt
    version). The verdict classes are explained in comments instead."""
    from harness.ntb.answer_judging import AnswerVerdict, LimitationVerdict
    from harness.ntb.call_matching import CallsVerdict
    from harness.selfscore.judges import ComplexityVerdict, HelpfulnessVerdict, SolvedVerdict
    for verdict in (HelpfulnessVerdict, SolvedVerdict, ComplexityVerdict, AnswerVerdict, LimitationVerdict,
                    CallsVerdict):
        assert "description" not in verdict.model_json_schema(), verdict.__name__
