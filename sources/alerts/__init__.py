"""Alerting over the database and the network: the outbox, delivery, channels, reminders, pages.

The overdue clock that flips a silent source is the services' (sources/services/overdue.py).

The decisions (which changes alert, what messages say, when to retry) are pure, in completeness.alerts.
"""
