"""JSON Lines as Django's, with times to the microsecond: copy_data's format (sources.services.copying).

Django's JSON encoder cuts times to milliseconds (ECMA-262's format), so a copy moved every stored time
(a run's arrival, a flip, a notification's due time) back by up to a millisecond, and two arrivals of
one millisecond became equal.
"""

from __future__ import annotations

import datetime
from typing import Any

from django.core.serializers import jsonl
from django.core.serializers.json import DjangoJSONEncoder

FORMAT = "exactjsonl"


class ExactEncoder(DjangoJSONEncoder):
    def default(self, o: Any) -> Any:
        if isinstance(o, datetime.datetime | datetime.time):
            return o.isoformat()
        return super().default(o)


class Serializer(jsonl.Serializer):
    def _init_options(self) -> None:
        super()._init_options()  # type: ignore[misc]  # Django's json.Serializer has it; the stubs do not
        self.json_kwargs["cls"] = ExactEncoder


Deserializer = jsonl.Deserializer
