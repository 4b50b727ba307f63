"""A local stand-in for the two sites Scrapy's own examples crawl (a book
shop paginated by "next" links with a detail page per book, and a quotes site
whose pages carry the records themselves), with category pages for a
CrawlSpider, on 127.0.0.1, with faults injected by number:

- `broken_books`: detail pages that always answer 500;
- `gone_books`: delisted books, 404;
- `broken_pages` / `broken_quote_pages`: catalogue or quotes pages that always answer 500;
- `gone_categories`: category pages linked from the index that answer 404;
- `start_status`: the answer of the start page (`/` and the quotes' first page).

The truth a report must match is in the config: `books`, `quotes`, `log`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from local_site import LocalSite

THIRD_PARTY = Path(__file__).with_name("third_party")
PAGE_SIZE = 20
QUOTES_PER_PAGE = 10


@dataclass
class ToScrapeConfig:
    books: int = 200
    categories: int = 4
    quotes: int = 100
    broken_books: frozenset[int] = frozenset()
    gone_books: frozenset[int] = frozenset()
    broken_pages: frozenset[int] = frozenset()
    broken_quote_pages: frozenset[int] = frozenset()
    gone_categories: frozenset[int] = frozenset()
    start_status: int = 200
    log: list[tuple[str, int]] = field(default_factory=list)

    @property
    def pages(self) -> int:
        return -(-self.books // PAGE_SIZE)

    @property
    def quote_pages(self) -> int:
        return -(-self.quotes // QUOTES_PER_PAGE)


def _book_link(n: int) -> str:
    return f'<article class="product_pod"><h3><a href="/catalogue/book_{n}/index.html">Book {n}</a></h3></article>'


class ToScrapeSite(LocalSite):
    def __init__(self, config: ToScrapeConfig) -> None:
        super().__init__()
        self.config = config

    def answer(self, path: str) -> tuple[int, bytes]:
        status, body = self._route(path)
        with self._lock:
            self.config.log.append((path, status))
        return status, body.encode()

    def _route(self, path: str) -> tuple[int, str]:
        config = self.config
        if path == "/robots.txt":
            return 404, "Not Found"
        if path == "/":
            return (config.start_status, "<h1>Oops</h1>") if config.start_status != 200 else (200, self._catalogue(1))
        if match := re.fullmatch(r"/catalogue/page-(\d+)\.html", path):
            page = int(match[1])
            if page in config.broken_pages:
                return 500, "<h1>Internal Server Error</h1>"
            return (200, self._catalogue(page)) if 1 <= page <= config.pages else (404, "<h1>Not found</h1>")
        if match := re.fullmatch(r"/catalogue/category/books/cat_(\d+)/index\.html", path):
            category = int(match[1])
            if category in config.gone_categories or not 0 <= category < config.categories:
                return 404, "<h1>Not found</h1>"
            books = [n for n in range(1, config.books + 1) if n % config.categories == category]
            return 200, self._page("".join(map(_book_link, books)), None)
        if match := re.fullmatch(r"/catalogue/book_(\d+)/index\.html", path):
            n = int(match[1])
            if n in config.broken_books:
                return 500, "<h1>Internal Server Error</h1>"
            if n in config.gone_books or not 1 <= n <= config.books:
                return 404, "<h1>Not found</h1>"
            return 200, (
                f'<ul class="breadcrumb"><li><a href="/">Home</a></li><li><a href="#">Category '
                f'{n % config.categories}</a></li><li class="active">Book {n}</li></ul>'
                f'<div class="product_main"><h1>Book {n}</h1><p class="price_color">£{n}.00</p></div>'
                f'<div id="product_description"><h2>Description</h2></div><p>About book {n}.</p>'
            )
        if match := re.fullmatch(r"/quotes/page/(\d+)/", path):
            page = int(match[1])
            if page == 1 and config.start_status != 200:
                return config.start_status, "<h1>Oops</h1>"
            if page in config.broken_quote_pages:
                return 500, "<h1>Internal Server Error</h1>"
            if not 1 <= page <= config.quote_pages:
                return 404, "<h1>Not found</h1>"
            first = (page - 1) * QUOTES_PER_PAGE + 1
            quotes = "".join(
                f'<div class="quote"><span class="text">Quote {n}</span><small class="author">Author {n % 7}'
                f'</small><div class="tags"><a class="tag">t{n % 3}</a></div></div>'
                for n in range(first, min(config.quotes, first + QUOTES_PER_PAGE - 1) + 1)
            )
            more = (
                f'<li class="next"><a href="/quotes/page/{page + 1}/">Next</a></li>'
                if page < config.quote_pages
                else ""
            )
            return 200, f"<html><body>{quotes}<ul class='pager'>{more}</ul></body></html>"
        return 404, "<h1>Not found</h1>"

    def _catalogue(self, page: int) -> str:
        config = self.config
        first = (page - 1) * PAGE_SIZE + 1
        books = "".join(map(_book_link, range(first, min(config.books, first + PAGE_SIZE - 1) + 1)))
        return self._page(books, f"/catalogue/page-{page + 1}.html" if page < config.pages else None)

    def _page(self, books: str, next_page: str | None) -> str:
        categories = "".join(
            f'<li><a href="/catalogue/category/books/cat_{k}/index.html">Category {k}</a></li>'
            for k in range(self.config.categories)
        )
        pager = f'<ul class="pager"><li class="next"><a href="{next_page}">next</a></li></ul>' if next_page else ""
        return (
            f'<html><body><div class="side_categories"><ul>{categories}</ul></div>'
            f"<section>{books}</section>{pager}</body></html>"
        )


def local_spider(spider: str, site_url: str, directory: Path) -> Path:
    """A copy of third_party/<spider>.py, the example's own code, its site's address pointed at the
    local copy (`site_url`) and nothing else changed: the path of the copy, in `directory`."""
    code = (THIRD_PARTY / f"{spider}.py").read_text()
    code = code.replace("http://books.toscrape.com", site_url).replace("http://quotes.toscrape.com", site_url)
    code = code.replace('"books.toscrape.com"', '"127.0.0.1"')
    directory.mkdir(parents=True, exist_ok=True)
    spider_file = directory / f"{spider}.py"
    spider_file.write_text(code)
    return spider_file
