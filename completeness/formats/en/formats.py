"""English formats as the pages write them (sources/templatetags/dashboard.py, utc): ISO dates, 24-hour
times, the zone named. The admin showed 'Dec. 1, 2026, 10 a.m.' with no zone."""

DATE_FORMAT = "Y-m-d"
SHORT_DATE_FORMAT = "Y-m-d"
TIME_FORMAT = "H:i T"
DATETIME_FORMAT = "Y-m-d H:i T"
SHORT_DATETIME_FORMAT = "Y-m-d H:i T"
