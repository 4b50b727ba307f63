# Shared by bin/serve and bin/test: one virtualenv, installed from the pinned constraints.
VENV="${VENV:-.venv}"

ensure_venv() {
    local stamp="$VENV/.installed"
    if [ ! -x "$VENV/bin/python" ]; then
        python3 -m venv "$VENV"
    fi
    # Reinstall only when the pins changed since the last install.
    if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ] || [ client/pyproject.toml -nt "$stamp" ] || [ constraints.txt -nt "$stamp" ]; then
        "$VENV/bin/pip" install --quiet --disable-pip-version-check -c constraints.txt -e ".[dev]" -e "client[scrapy]"
        touch "$stamp"
    fi
}
