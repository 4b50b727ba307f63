"""Demo data: the seeded fleet and its stories, posted through the write path."""

# The staff login `manage.py seed_demo` makes, password the same: the login page names it where it
# exists (here, not in seed.py, so that the web process does not load the demo's data to know it).
DEMO_USERNAME = "demo"
