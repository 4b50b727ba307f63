"""Alerting over the database and the network: the outbox, delivery, channels, the overdue clock, pages.

The decisions (which changes alert, what messages say, when to retry) are pure, in completeness.alerts.
"""
