"""Demo stories of data lost without a record missing: a price field half empty, and a
source shrinking 4% a day that no run-to-run comparison catches. Used by sources.demo.seed."""

from __future__ import annotations

import random
from collections.abc import Callable
from datetime import datetime
from typing import Any

Maker = Callable[[int, datetime], dict[str, Any]]

# A listing site's fields and how often each is filled on a normal day: eleven of them, so the
# coverage chart has to choose which eight to draw.
LISTING_FIELDS = {
    "title": 1.0,
    "description": 0.995,
    "price": 0.99,
    "photos": 0.97,
    "location": 0.96,
    "area": 0.91,
    "rooms": 0.88,
    "agent": 0.83,
    "floor": 0.74,
    "phone": 0.62,
    "furnished": 0.55,
}


def half_empty_price(normal: Maker, rng: random.Random) -> Maker:
    """Story: every listing arrives, but for the last two runs half of them without a price (a layout
    change the counts never show); exit 0 both times."""

    def make(day: int, start: datetime) -> dict[str, Any]:
        body = normal(day, start)
        collected = body["collected"]
        # Upserted into the store, not replaced: the story is the empty field, not an overwritten snapshot.
        body["snapshot"] = {"action": "appended", "rows": collected}
        shares = dict(LISTING_FIELDS)
        if day <= 1:
            shares["price"] = 0.48 if day == 1 else 0.47
        body["fields"] = {
            name: min(collected, round(collected * min(1.0, share + rng.uniform(-0.006, 0.006))))
            for name, share in shares.items()
        }
        return body

    return make


def slow_decline(normal: Maker, rng: random.Random) -> Maker:
    """Story: no declared total, and from nine days ago 4% fewer records a day, each run within a quarter
    of the one before. With the demo's 60 days the source has learned its normal: from the second day
    it is below it (below_expected), the last two more than a quarter under it (drop). With under two
    weeks of history (the tests seed 12 days) the fixed rules judge it: each run passes `drop` against
    the one before, and the last two are more than a quarter below the best of 30 days (`trend`)."""

    def make(day: int, start: datetime) -> dict[str, Any]:
        body = normal(day, start)
        body["snapshot"] = {"action": "appended", "rows": body["collected"]}
        if day < 9:
            shrink = 0.96 ** (9 - day)
            collected = round(body["collected"] * shrink)
            body.update(collected=collected, written=collected)
            pages = body.get("pages")
            if pages:
                body["pages"] = {**pages, "expected": collected // 25 + 1, "fetched": collected // 25 + 1}
            body["snapshot"] = {"action": "appended", "rows": collected}
        return body

    return make
