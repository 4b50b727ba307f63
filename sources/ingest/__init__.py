"""The write path of a run report: parse and refuse, judge against the past, store, move the source's state."""
