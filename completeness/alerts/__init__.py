"""The pure half of alerting: which changes alert, what the messages say, when to retry.

Nothing here touches the database or the network; sources.alerts does, through these functions.
"""
