"""The kit as a Scrapy add-on: one line in ADDONS enables all of it.

    ADDONS = {"completeness_client.scrapy_kit.Addon": 0}

Components a project already lists (say, at another priority) are left as
the project has them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .extension import CompletenessExtension
from .kind_learning import KindLearningMiddleware
from .middleware import BreakerMiddleware
from .page_outcomes import PageOutcomeMiddleware

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

EXTENSION_PRIORITY = 500
# RetryMiddleware is 550. Lower numbers sit nearer the engine: 540 sees a
# response once retries are done with it, 560 sees every attempt.
PAGE_OUTCOME_PRIORITY = 540
BREAKER_PRIORITY = 560
# Spider middlewares: higher numbers sit nearer the spider. 1000 sees what a
# callback yields before DepthMiddleware (900) and the others filter it.
KIND_LEARNING_PRIORITY = 1000


class Addon:
    def update_settings(self, settings: BaseSettings) -> None:
        settings.setdefault_in_component_priority_dict("EXTENSIONS", CompletenessExtension, EXTENSION_PRIORITY)
        settings.setdefault_in_component_priority_dict("DOWNLOADER_MIDDLEWARES", BreakerMiddleware, BREAKER_PRIORITY)
        settings.setdefault_in_component_priority_dict(
            "DOWNLOADER_MIDDLEWARES", PageOutcomeMiddleware, PAGE_OUTCOME_PRIORITY
        )
        settings.setdefault_in_component_priority_dict(
            "SPIDER_MIDDLEWARES", KindLearningMiddleware, KIND_LEARNING_PRIORITY
        )
