"""Imports point one way: the app (sources/) uses the project package (completeness/), never the reverse.

The project's URLconf is the one place that names the app's views; everything else in completeness/
(settings, the report schema, the verdict engine, the alert policy and messages, the Celery app) must
import nothing from sources/, lazily or not, so the pure core can be read and tested alone.

Inside the app the subpackages point one way too (docs/decisions.md, "Layout of sources/"): the write
path (sources/ingest) and the domain services (sources/services) import no page and nothing of the
API; no package imports another that imports it back; and a `_private` name stays in its module.
"""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WIRING = {"completeness/urls.py"}


def imported_modules(path: Path) -> set[str]:
    modules = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            modules.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            modules.add(node.module)
    return modules


def test_the_project_package_imports_nothing_from_the_app():
    offenders = {
        str(path.relative_to(ROOT)): sorted(m for m in imported_modules(path) if m.split(".")[0] == "sources")
        for path in sorted((ROOT / "completeness").rglob("*.py"))
        if str(path.relative_to(ROOT)) not in WIRING
    }
    assert {path: names for path, names in offenders.items() if names} == {}


def test_the_check_sees_a_lazy_import(tmp_path):
    module = tmp_path / "lazy.py"
    module.write_text("def job():\n    from sources.alerts import delivery\n")
    assert imported_modules(module) == {"sources.alerts"}


PACKAGES = ("sources", "completeness")


def source_files() -> list[Path]:
    return sorted(path for package in PACKAGES for path in (ROOT / package).rglob("*.py"))


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def is_module(name: str) -> bool:
    path = ROOT.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def project_imports(path: Path) -> set[str]:
    """The project's modules that `path` imports, lazily or not: `from sources.services import health`
    names sources.services.health, `from sources.models import Run` names sources.models."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                name = f"{node.module}.{alias.name}"
                found.add(name if is_module(name) else node.module)
    return {name for name in found if name.split(".")[0] in PACKAGES}


def within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def test_every_import_is_absolute_so_the_checks_read_them_all():
    relative = [
        f"{path.relative_to(ROOT)}:{node.lineno}"
        for path in source_files()
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ImportFrom) and node.level
    ]
    assert relative == []


def test_the_write_path_and_the_services_import_no_page_and_nothing_of_the_api():
    offenders = {
        str(path.relative_to(ROOT)): sorted(
            name for name in project_imports(path) if within(name, "sources.pages") or within(name, "sources.api")
        )
        for folder in ("sources/ingest", "sources/services")
        for path in sorted((ROOT / folder).rglob("*.py"))
    }
    assert {path: names for path, names in offenders.items() if names} == {}


def is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = dotted(node.value)
        return f"{base}.{node.attr}" if base else None
    return None


def borrowed_private_names(path: Path) -> set[str]:
    """The `_private` names `path` takes from other modules of the project: imported by name
    (`from x import _y`) or read from an imported module (`x._y`). Attributes of classes (`Model._meta`)
    are not a module's names and are not counted."""
    tree = ast.parse(path.read_text())
    modules = {}  # a local name -> the project module it is bound to
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                top = alias.name.split(".")[0]
                if top in PACKAGES:
                    # `import sources.alerts.admin` binds `sources`; `import x.y as z` binds z to x.y.
                    modules[alias.asname or top] = alias.name if alias.asname else top
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in PACKAGES:
            for alias in node.names:
                name = f"{node.module}.{alias.name}"
                if is_private(alias.name):
                    found.add(name)
                elif is_module(name):
                    modules[alias.asname or alias.name] = name
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and is_private(node.attr):
            base = dotted(node.value)
            if base is None or base.split(".")[0] not in modules:
                continue
            root, _, rest = base.partition(".")
            module = ".".join(filter(None, [modules[root], rest]))
            if is_module(module):
                found.add(f"{module}.{node.attr}")
    return found


def test_no_module_borrows_a_private_name_of_another():
    """What another module needs gets a public name where it lives. The app's code only: tests and benches
    may reach into a module they measure or test."""
    offenders = {str(path.relative_to(ROOT)): sorted(borrowed_private_names(path)) for path in source_files()}
    assert {path: names for path, names in offenders.items() if names} == {}


def test_the_private_check_sees_an_import_and_a_module_attribute(tmp_path):
    module = tmp_path / "borrows.py"
    module.write_text(
        "import sources.services.retention as kept\n"
        "from sources.pages.charts import figures\n"
        "from sources.pages.charts.figures import _iso\n"
        "from sources.models import Source\n"
        "figures._hline(1, 'red')\n"
        "kept._delete\n"
        "Source._meta\n"
    )
    assert borrowed_private_names(module) == {
        "sources.pages.charts.figures._iso",
        "sources.pages.charts.figures._hline",
        "sources.services.retention._delete",
    }


def node_of(module: str) -> str:
    """A module's place in the package graph: its first-level subpackage (sources.pages,
    completeness.web), or itself at the top of sources/ or completeness/ (sources.models, completeness.report)."""
    return ".".join(module.split(".")[:2])


# No way back is allowed: the Celery engine sends jobs to its one task by name, not by import.
ALLOWED_BACK: set[tuple[str, str]] = set()


def package_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for path in source_files():
        here = node_of(module_name(path))
        for name in project_imports(path):
            there = node_of(name)
            if there != here and (here, there) not in ALLOWED_BACK:
                graph.setdefault(here, set()).add(there)
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str]:
    """One cycle of the graph as the path that walks it (first node repeated at the end), or []."""
    done: set[str] = set()

    def walk(node: str, path: list[str]) -> list[str]:
        if node in path:
            return path[path.index(node) :] + [node]
        if node in done:
            return []
        for after in sorted(graph.get(node, ())):
            cycle = walk(after, path + [node])
            if cycle:
                return cycle
        done.add(node)
        return []

    for start in sorted(graph):
        cycle = walk(start, [])
        if cycle:
            return cycle
    return []


def test_no_package_imports_one_that_imports_it_back():
    assert find_cycle(package_graph()) == []


def test_the_cycle_check_finds_a_cycle_through_three_packages():
    graph = {
        "sources.pages": {"sources.services"},
        "sources.services": {"sources.alerts"},
        "sources.alerts": {"sources.pages", "sources.models"},
    }
    assert find_cycle(graph) == ["sources.alerts", "sources.pages", "sources.services", "sources.alerts"]
    assert find_cycle({"sources.pages": {"sources.services"}, "sources.services": {"sources.models"}}) == []


# The statements built once (sources/ingest/rows.py) trade the ORM's generality for the CPU of the
# few statements every report runs; anywhere else they would only be a second way to write a row.
ROWS_READERS = ("sources.ingest", "sources.api.auth")


def test_the_statement_cache_serves_only_the_report_path():
    users = {
        module_name(path)
        for path in source_files()
        if "sources.ingest.rows" in project_imports(path) and module_name(path) != "sources.ingest.rows"
    }
    assert users, "nothing imports sources.ingest.rows: the check reads no import"
    assert {name for name in users if not any(within(name, allowed) for allowed in ROWS_READERS)} == set()
