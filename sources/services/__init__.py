"""Domain services shared by the write path, pages, API and jobs: health, pauses, windows, tokens, retention, rules."""
