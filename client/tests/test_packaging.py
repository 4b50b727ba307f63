from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

PYPROJECT = Path(__file__).parents[1] / "pyproject.toml"


def test_metadata_matches_the_contract():
    project = tomllib.loads(PYPROJECT.read_text())["project"]
    assert project["name"] == "crawler-completeness"
    assert project["requires-python"] == ">=3.11"
    assert project["dependencies"] == []  # the core needs nothing outside the standard library
    assert project["optional-dependencies"]["scrapy"] == ["scrapy==2.19.0"]
    assert project["scripts"]["completeness-report"] == "completeness_client.cli:main"
    assert project["scripts"]["completeness-backfill"] == "completeness_client.backfill:main"


def test_core_imports_without_scrapy_or_django():
    code = (
        "import sys\n"
        "sys.modules['scrapy'] = None\n"
        "sys.modules['django'] = None\n"
        "import completeness_client, completeness_client.cli, completeness_client.backfill\n"
        "print('ok')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr
