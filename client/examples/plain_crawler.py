r"""A plain-Python crawler using the kit: breaker, retry budget, lost pages,
declared total, report and verdict, for any site whose listing pages link
further listing pages and record pages and whose first page states the total.
The markup is given as regular expressions (standard library only), each
with one group:

    python plain_crawler.py LISTING_URL SERVICE_URL TOKEN \
        --total 'id="total">(\d+)<' --page-links 'class="page" href="([^"]+)"' \
        --item-links 'class="item" href="([^"]+)"' --item-marker 'class="price"' ; echo $?

A listing page that fails, answers 404, or comes without the total (first
page) or without a single link is lost, never "the end of the listing" and
never a removed record; only a record's 404/410 is removed. A record page's
200 without `--item-marker` (what every real record page has) is a stub: a
failure the breaker counts and the retries try again, never a record
collected. Stopped by SIGTERM (a scheduler's timeout), it reports what it
has, incomplete.
"""

from __future__ import annotations

import argparse
import re
import signal
import sys
import threading
import time
import urllib.error
import urllib.request
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from urllib.parse import urljoin

from completeness_client import (
    BreakerState,
    BudgetExhausted,
    FailureWindowBreaker,
    ReportPoster,
    RetryBudget,
    RunReport,
    call_with_budget,
    classify_exception,
    classify_status,
)
from completeness_client.summary import describe, describe_findings


@dataclass(frozen=True)
class Layout:
    total: str  # on the first listing page; group 1: the number of records the source announces
    page_links: str  # group 1: the href of a further listing page
    item_links: str  # group 1: the href of a record page
    min_body_bytes: int = 0  # a 200 shorter than this is a stub; 0: your pages' floor is unknown
    # What every real record page has: a record page's 200 without it is a stub ("" checks nothing). A
    # site that is down behind a 200 and a 211-byte "back shortly" page passed a size floor of 200 and,
    # without this, had every stub counted as a collected record: complete, exit 0.
    item_marker: str = ""


class Requeue(Exception):
    """The breaker tripped or is paused: come back to this URL after the pause."""


class CrawlStopped(Exception):
    """The breaker stopped the run for good."""


class TransientError(Exception):
    pass


def http_get(url: str, timeout: float) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def crawl(
    listing_url: str,
    service_url: str,
    token: str,
    layout: Layout,
    *,
    source: str = "plain-catalogue",
    breaker: FailureWindowBreaker | None = None,
    spool_dir: str | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> tuple[int, dict]:
    breaker = breaker or FailureWindowBreaker()
    report = RunReport(source, breaker=breaker)

    def fetch(url: str, is_page: bool) -> bytes | None:
        """The body, or None when the record is gone (404/410)."""

        def attempt(timeout: float, _lease: object) -> bytes | None:
            admission = breaker.admit()
            if admission.stopped:
                raise CrawlStopped
            if not admission.allowed:
                raise Requeue
            try:
                status, body = http_get(url, timeout)
            except OSError as exc:
                # key: a URL counts once in the breaker's window however often it is retried (a few
                # records broken for good, retried three times each, tripped it on their own).
                report.observe_request(classify_exception(exc), admission, key=url)
                if breaker.state is not BreakerState.RUNNING:
                    raise Requeue from exc
                raise
            request_class = classify_status(status, len(body), layout.min_body_bytes)
            if (
                request_class == "ok"
                and not is_page
                and layout.item_marker
                and re.search(layout.item_marker, body.decode("utf-8", "replace")) is None
            ):
                request_class = "short_body"
            report.observe_request(request_class, admission, key=url)
            if request_class == "ok":
                return body
            if request_class == "not_found":
                return None
            if breaker.state is not BreakerState.RUNNING:
                raise Requeue
            raise TransientError(f"{request_class} from {url}")

        return call_with_budget(
            attempt,
            RetryBudget(total_seconds=60),
            per_attempt_timeout=10,
            retry_delay=0.1,
            max_attempts=3,
            sleep=sleep,
            is_retryable=lambda exc: not isinstance(exc, (Requeue, CrawlStopped)),
        )

    def listing(url: str, body: bytes | None) -> list[tuple[str, bool]]:
        """The links of a listing page; a page that is gone or unrecognisable is lost."""
        html = "" if body is None else body.decode("utf-8", "replace")
        pages = [urljoin(url, href) for href in re.findall(layout.page_links, html)]
        items = [urljoin(url, href) for href in re.findall(layout.item_links, html)]
        if url == listing_url:
            total = re.search(layout.total, html)
            if total is None:
                report.page_lost(url)  # no total: a stub, a 404 or another layout, not an empty source
                return []
            report.declared_total = int(total.group(1))
        if body is None or not (pages or items):
            report.page_lost(url)
            return []
        report.page_fetched()
        return [(href, True) for href in pages] + [(href, False) for href in items]

    # A scheduler's timeout sends SIGTERM: the run so far is reported (end reason "shutdown", so
    # incomplete) rather than ending with nothing posted, which the service could not tell from a
    # crawler that never ran.
    stopped_by: list[str] = []
    own_handler = threading.current_thread() is threading.main_thread()
    if own_handler:
        previous = signal.signal(signal.SIGTERM, lambda *_: stopped_by.append("shutdown"))
    queue: deque[tuple[str, bool]] = deque([(listing_url, True)])
    seen = {listing_url}
    second_pass: set[str] = set()
    report.finish_reason = "finished"
    while queue:
        if stopped_by:
            report.finish_reason = stopped_by[0]
            break
        if not breaker.wait_while_paused(sleep):
            report.finish_reason = "completeness_breaker_stopped"
            break
        url, is_page = queue.popleft()
        try:
            body = fetch(url, is_page)
        except Requeue:
            queue.append((url, is_page))  # not lost: fetched again after the pause
            continue
        except CrawlStopped:
            queue.appendleft((url, is_page))
            report.finish_reason = "completeness_breaker_stopped"
            break
        except (BudgetExhausted, OSError, TransientError):
            if url not in second_pass:
                # A second pass at the end of the queue: a blip heals, a real loss stays lost.
                second_pass.add(url)
                queue.append((url, is_page))
            elif is_page:
                report.page_lost(url)  # never "the end of the listing"
            else:
                report.record_lost()
            continue
        if is_page:
            follow = listing(url, body)
            for href, page in follow:
                if href not in seen:
                    seen.add(href)
                    queue.append((href, page))
        elif body is None:
            report.removed += 1  # a record gone at the source: attrition
        else:
            report.collected += 1
    if own_handler:
        signal.signal(signal.SIGTERM, previous)  # a caller that goes on is stopped by SIGTERM again
    # What a stop left: listing pages never fetched are lost (as the Scrapy kit counts them), and so
    # are records that had failed and waited for their second pass; records never tried are no loss
    # known, only a shortfall against the declared total.
    for url, is_page in queue:
        if is_page:
            report.page_lost(url)
        elif url in second_pass:
            report.record_lost()

    body = report.build()
    result = ReportPoster(service_url, token, spool_dir=spool_dir).post(body)
    # The kit's own lines: the verdict and exit code, then each finding with its numbers.
    print(describe(result), *describe_findings(result), sep="\n", file=sys.stderr)
    return result.exit_code, body


def regex(value: str) -> str:
    # Checked here, not at the first page it is used on: --item-marker's error was raised inside every
    # record's fetch, retried as a failed download, and each record was counted lost.
    try:
        re.compile(value)
    except re.error as exc:
        raise argparse.ArgumentTypeError(f"not a regular expression ({exc}): {value!r}") from exc
    return value


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("listing_url", help="the first listing page")
    parser.add_argument("service_url")
    parser.add_argument("token")
    parser.add_argument("--total", required=True, type=regex, help="regex: group 1 is the total on the first page")
    parser.add_argument("--page-links", required=True, type=regex, help="regex: group 1 is a listing page's href")
    parser.add_argument("--item-links", required=True, type=regex, help="regex: group 1 is a record page's href")
    parser.add_argument("--min-body-bytes", type=int, default=0, help="a shorter 200 is a stub page")
    parser.add_argument(
        "--item-marker", default="", type=regex, help="regex every real record page matches; without it, a stub"
    )
    parser.add_argument("--source", default="plain-catalogue")
    args = parser.parse_args(argv)
    layout = Layout(args.total, args.page_links, args.item_links, args.min_body_bytes, args.item_marker)
    return crawl(args.listing_url, args.service_url, args.token, layout, source=args.source)[0]


if __name__ == "__main__":
    sys.exit(main())
