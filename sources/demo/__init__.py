"""Demo data: the seeded fleet and its stories, posted through the write path."""
