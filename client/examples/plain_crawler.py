"""A plain-Python crawler using the kit: breaker, retry budget, lost pages,
declared total, report and verdict. Crawls the catalogue layout of the tests
(page 1 shows the total and links to every page; item pages hold records).

    python plain_crawler.py SITE_URL SERVICE_URL TOKEN ; echo $?
"""

from __future__ import annotations

import re
import sys
import time
import urllib.error
import urllib.request
from collections import deque
from collections.abc import Callable
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

MIN_BODY_BYTES = 200  # anything shorter is a stub page, not content


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
    site_url: str,
    service_url: str,
    token: str,
    *,
    source: str = "plain-catalogue",
    breaker: FailureWindowBreaker | None = None,
    spool_dir: str | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> tuple[int, dict]:
    breaker = breaker or FailureWindowBreaker()
    report = RunReport(source, breaker=breaker)

    def fetch(url: str) -> bytes | None:
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
                report.observe_request(classify_exception(exc), admission)
                if breaker.state is not BreakerState.RUNNING:
                    raise Requeue from exc
                raise
            request_class = classify_status(status, len(body), MIN_BODY_BYTES)
            report.observe_request(request_class, admission)
            if request_class == "ok":
                return body
            if request_class == "not_found":
                return None
            if breaker.state is not BreakerState.RUNNING:
                raise Requeue
            raise TransientError(f"{request_class} from {url}")

        return call_with_budget(
            attempt, RetryBudget(total_seconds=60), per_attempt_timeout=10, retry_delay=0.1, max_attempts=3,
            sleep=sleep,
            is_retryable=lambda exc: not isinstance(exc, (Requeue, CrawlStopped)),
        )

    queue: deque[tuple[str, bool]] = deque([(urljoin(site_url, "/list?page=1"), True)])
    second_pass: set[str] = set()
    while queue:
        if not breaker.wait_while_paused(sleep):
            break
        url, is_page = queue.popleft()
        try:
            body = fetch(url)
        except Requeue:
            queue.append((url, is_page))  # not lost: fetched again after the pause
            continue
        except CrawlStopped:
            break
        except (BudgetExhausted, OSError, TransientError):
            if url not in second_pass:
                # A second pass at the end of the queue: a blip heals, a real loss stays lost.
                second_pass.add(url)
                queue.append((url, is_page))
            elif is_page:
                report.page_lost(url)  # never "the end of the listing"
            else:
                report.counters["records_lost"] = report.counters.get("records_lost", 0) + 1
            continue
        if body is None:
            report.removed += 1
            continue
        html = body.decode("utf-8", "replace")
        if not is_page:
            report.collected += 1
            continue
        report.page_fetched()
        total = re.search(r'id="total">(\d+)<', html)
        if total:
            report.declared_total = int(total.group(1))
            pages = re.findall(r'class="page" href="([^"]+)"', html)
            report.pages_expected = len(pages)
            queue.extend((urljoin(url, href), True) for href in pages if not href.endswith("page=1"))
        queue.extend((urljoin(url, href), False) for href in re.findall(r'class="item" href="([^"]+)"', html))

    body = report.build()
    result = ReportPoster(service_url, token, spool_dir=spool_dir).post(body)
    print(f"{source}: {result.outcome} {result.verdict or result.message}", file=sys.stderr)
    return result.exit_code, body


if __name__ == "__main__":
    sys.exit(crawl(*sys.argv[1:4])[0])
