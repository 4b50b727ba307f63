"""Date and time formats of the admin and of Django's own filters (FORMAT_MODULE_PATH): the pages'
one way of writing a time, '2026-12-01 10:00 UTC', the zone always said."""
