"""URL converters shared by the app's URLconfs (the pages and the alerts pages)."""

from django.urls import register_converter


class SourceSlug:
    """A report's slug (completeness.report.SLUG_PATTERN allows dots, Django's `slug` does not) and
    the SlugField's (capitals, a leading dash or underscore): every source has a page."""

    regex = r"[-A-Za-z0-9_.]{1,100}"

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return value


register_converter(SourceSlug, "source_slug")
