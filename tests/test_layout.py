"""Imports point one way: the app (sources/) uses the project package (completeness/), never the reverse.

The project's URLconf is the one place that names the app's views; everything else in completeness/
(settings, the report schema, the verdict engine, the alert policy and messages, the Celery app) must
import nothing from sources/, lazily or not, so the pure core can be read and tested alone.
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
