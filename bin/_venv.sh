# Shared by bin/serve, bin/manage, bin/test and bin/process (in a checkout, not the image): one
# virtualenv, installed from the pinned constraints.
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

# A key of this checkout's own, made once and kept with its data under VAR_DIR (the settings refuse
# the built-in one unless DEBUG is on), so that sessions survive a restart. SECRET_KEY set wins.
ensure_secret_key() {
    if [ -n "${SECRET_KEY:-}" ]; then
        return
    fi
    local key_file="${VAR_DIR:-var}/secret-key"
    mkdir -p "$(dirname "$key_file")"
    if [ ! -s "$key_file" ]; then
        (umask 077 && od -An -N48 -tx1 /dev/urandom | tr -d ' \n' > "$key_file")
    fi
    SECRET_KEY=$(cat "$key_file")
    export SECRET_KEY
}

# The address bin/serve serves this VAR_DIR at (it writes it there), for bin/manage: add_channel tells a
# new channel what is already wrong, and its links named the default port, not the one ADDR chose.
# SITE_URL set wins.
ensure_site_url() {
    local url_file="${VAR_DIR:-var}/site-url"
    if [ -z "${SITE_URL:-}" ] && [ -s "$url_file" ]; then
        SITE_URL=$(cat "$url_file")
        export SITE_URL
    fi
}
