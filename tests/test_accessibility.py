"""What a screen reader is given in the markup: a text alternative for every chart."""

from __future__ import annotations

import re

from sources.models import Channel, Source
from tests.conftest import run_report
from tests.test_proxies_page import pool  # noqa: F401 (fixture)
from tests.test_run_page import run_id  # noqa: F401 (fixture)


def _figures(page: str) -> dict[str, str]:
    """Each <figure>'s chart id and its caption's words."""
    found = re.findall(
        r'<figure[^>]*>\s*<div class="chart" id="chart-(\w+)".*?<figcaption[^>]*>(.*?)</figcaption>', page, re.S
    )
    return {name: " ".join(re.sub(r"<[^>]+>", " ", caption).split()) for name, caption in found}


def test_each_chart_of_a_source_says_in_words_what_it_draws(api, staff_client):
    """A Plotly chart is an SVG of tick labels to a screen reader, and an empty box without JavaScript:
    the collected line, the declared total and the incomplete runs it marks were nowhere in words."""
    for n in (4, 3, 2):
        api.post_run(run_report("shop", n, collected=9000, declared_total=9000, fields={"price": 8900}))
    api.post_run(run_report("shop", 1, collected=1200, declared_total=9000, fields={"price": 600}, exit_code=1))
    page = staff_client.get("/sources/shop/").content.decode()
    captions = _figures(page)
    assert set(captions) == {"collected", "coverage", "completeness"}, captions
    assert "Latest: collected 1,200; declared total 9,000" in captions["collected"]
    assert "Marked: 1 incomplete (crawler knew)" in captions["collected"]
    assert "UTC" in captions["collected"]
    assert "price 50.0%" in captions["coverage"]
    assert "13.3%" in captions["completeness"]


def test_the_run_and_proxies_charts_say_it_too(run_id, pool, staff_client):  # noqa: F811 (fixtures)
    window = _figures(staff_client.get(f"/runs/{run_id}/").content.decode())
    assert list(window) == ["window"] and "request sequence 0 to 4,100" in window["window"], window
    capacity = _figures(staff_client.get("/proxies/").content.decode())
    assert list(capacity) == ["capacity"] and "Latest: eligible" in capacity["capacity"], capacity


def _table_after(page: str, heading: str) -> str:
    start = page.index(f"<h2>{heading}</h2>")
    return page[start : page.index("</table>", start)]


def test_the_source_pages_history_tables_name_their_columns(api, staff_client):
    """Pauses and health changes were tables of bare cells: a screen reader read "2026-12-01 03:00 UTC,
    paused, user:ops, migration" with no column to say which was the actor and which the reason."""
    for n in (3, 2, 1):
        api.post_run(run_report("shop", n, collected=9000 if n > 1 else 1200, declared_total=9000))
    staff_client.post("/sources/shop/pause", {"reason": "proxy migration"})
    page = staff_client.get("/sources/shop/").content.decode()
    pauses = _table_after(page, "Pauses")
    assert "proxy migration" in pauses
    assert re.findall(r"<th[^>]*>([^<]+)</th>", pauses) == ["when", "what", "by", "reason", "until"]
    changes = _table_after(page, "Health changes and baseline acceptances")
    assert "failing" in changes
    assert re.findall(r"<th[^>]*>([^<]+)</th>", changes) == ["when", "change", "cause"]


def test_a_runs_failed_batches_name_their_columns(api, staff_client):
    # Each row's name was a row header, but nothing said the next cells were rows and an error.
    body = run_report("shop", 1, collected=900, failed_batches=[{"name": "page-7", "rows": 100, "error": "timeout"}])
    run = api.post_run(body).json()["run"]
    batches = _table_after(staff_client.get(f"/runs/{run}/").content.decode(), "Failed batches and delivery errors")
    assert "page-7" in batches and "timeout" in batches
    assert re.findall(r"<th[^>]*>([^<]+)</th>", batches)[:3] == ["batch or delivery error", "count", "error"]


def test_a_proxys_transitions_name_their_columns(pool, staff_client):  # noqa: F811 (fixture)
    page = staff_client.get("/proxies/").content.decode()
    inner = re.findall(r'<table class="grid inner">(.*?)</table>', page, re.S)
    assert inner
    for table in inner:
        assert re.findall(r"<th[^>]*>([^<]+)</th>", table) == ["when", "change", "reason", "stage"]


def test_each_navigation_is_named_and_the_header_says_which_page_is_open(api, staff_client):
    """The header's current page was a colour and an underline only, and the header's and the pager's
    <nav> were two landmarks both called "navigation"."""
    for n in range(60):
        api.post_run(run_report(f"shop-{n:02}", 1))
    pages = {"/": "Overview", "/proxies/": "Proxies", "/alerts/": "Alerts", "/alerts/channels/": "Channels"}
    for path, current in pages.items():
        page = staff_client.get(path).content.decode()
        navs = re.findall(r"<nav\b[^>]*>", page)
        assert navs and all("aria-label=" in nav for nav in navs), (path, navs)
        assert len(set(re.findall(r'<nav\b[^>]*aria-label="([^"]+)"', page))) == len(navs), (path, navs)
        assert re.findall(r'<a [^>]*aria-current="page"[^>]*>([^<]+)</a>', page) == [current], path
    source = staff_client.get("/sources/shop-00/").content.decode()
    assert 'aria-current="page"' not in source.split("</header>")[0]


def test_a_refused_pause_marks_its_field_and_ties_the_reason_to_it(api, staff_client):
    """A refused end time was said at the top of the page only ("Not paused: until: ..."): the field itself
    was neither marked invalid nor tied to why, so a screen reader on the form heard nothing wrong."""
    api.post_run(run_report("shop", 1))
    typed = {"reason": "supplier migrating", "until": "2020-01-01T10:00"}
    page = staff_client.post("/sources/shop/pause", typed, follow=True).content.decode()
    form = page[page.index('id="pause-form"') : page.index("</form>", page.index('id="pause-form"'))]
    until = re.search(r'<input type="datetime-local" name="until"[^>]*>', form).group(0)
    assert 'aria-invalid="true"' in until
    described = re.search(r'aria-describedby="([^"]+)"', until).group(1).split()
    assert "id_until_error" in described and "id_until_helptext" in described
    error = re.search(r'id="id_until_error"[^>]*>(.*?)</', form, re.S).group(1)
    assert "must lie in the future" in error, error
    reason = re.search(r'<input type="text" name="reason"[^>]*>', form).group(0)
    assert "aria-invalid" not in reason and 'value="supplier migrating"' in reason
    # A later visit starts clean.
    again = staff_client.get("/sources/shop/").content.decode()
    assert "aria-invalid" not in again and 'id="id_until_error"' not in again


def test_every_column_and_the_overviews_table_have_a_name(api, staff_client):
    """The column of Acknowledge, of a channel's buttons and of a run's "accept as baseline" had an empty
    header (a screen reader said nothing for it), and the overview's table of sources, the page's main
    content, had no name to find it by among the page's tables."""
    for n in (3, 2, 1):
        api.post_run(run_report("shop", n, collected=9000 if n > 1 else 1200))
    Channel.objects.create(kind="webhook", name="ops hook", target="https://hooks.example/x")
    for path in ("/", "/sources/shop/", "/alerts/", "/alerts/channels/"):
        page = staff_client.get(path).content.decode()
        headers = [re.sub(r"<[^>]+>", "", h).strip() for h in re.findall(r"<th\b[^>]*>(.*?)</th>", page, re.S)]
        assert headers and "" not in headers, (path, headers)
    overview = staff_client.get("/").content.decode()
    caption = re.search(r'<table class="grid overview" id="sources">\s*<caption[^>]*>([^<]+)</caption>', overview)
    assert caption and "source" in caption.group(1).lower()


def _names(page: str, pattern: str) -> list[str]:
    """The accessible name of each element matched by `pattern` (one group: the tag's attributes and
    content): its aria-label, else its text."""
    names = []
    for attributes, content in re.findall(pattern, page, re.S):
        label = re.search(r'aria-label="([^"]+)"', attributes)
        names.append(label.group(1) if label else " ".join(re.sub(r"<[^>]+>", " ", content).split()))
    return names


def test_a_rows_button_says_which_row_it_acts_on(api, staff_client):
    """Tabbing through a source's rules a screen reader heard "switch to observe" thirteen times, and on
    /alerts/ "Acknowledge" once per problem: nothing said which rule or source each one acts on."""
    for n in (3, 2, 1):
        api.post_run(run_report("shop", n, collected=9000 if n > 1 else 1200, declared_total=9000))
        api.post_run(run_report("feed", n, collected=500 if n > 1 else 100))
    Channel.objects.create(kind="webhook", name="ops hook", target="https://hooks.example/x")
    Channel.objects.create(kind="webhook", target="https://hooks.example/y")
    source = staff_client.get("/sources/shop/").content.decode()
    switches = _names(source, r'<button type="submit" class="small"([^>]*)>(.*?)</button>')
    assert len(switches) > 5 and len(set(switches)) == len(switches), switches
    assert all(name.startswith(("switch to observe", "switch to enforce")) for name in switches), switches
    assert any("declared_total" in name for name in switches), switches
    accept = _names(source, r'<a class="button small"([^>]*)>(.*?)</a>')
    assert accept and all(name.startswith("accept as baseline") for name in accept)
    assert len(set(accept)) == len(accept), accept
    alerts = staff_client.get("/alerts/").content.decode()
    acknowledge = _names(alerts, r'<button type="submit"([^>]*)>(Acknowledge)</button>')
    assert sorted(acknowledge) == ["Acknowledge feed", "Acknowledge shop"], acknowledge
    channels = staff_client.get("/alerts/channels/").content.decode()
    tests = _names(channels, r"<button([^>]*)>(Send a test message)</button>")
    assert len(tests) == 2 and len(set(tests)) == 2 and all(n.startswith("Send a test message") for n in tests), tests


def test_every_page_has_one_h1(api, staff_client):
    """The page after logging out was a bare paragraph: no heading for a screen reader to land on."""
    api.post_run(run_report("shop", 1))
    run = Source.objects.get(slug="shop").last_run_id
    pages = ["/", "/sources/shop/", f"/runs/{run}/", "/proxies/", "/alerts/", "/alerts/channels/", "/nope/"]
    for path in pages:
        page = staff_client.get(path).content.decode()
        assert page.count("<h1") == 1, path
    logged_out = staff_client.post("/accounts/logout/").content.decode()
    assert logged_out.count("<h1") == 1, logged_out
    login = staff_client.get("/accounts/login/").content.decode()
    assert login.count("<h1") == 1
