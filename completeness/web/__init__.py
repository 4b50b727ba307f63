"""The web plumbing of the project: security headers, JSON logs, static file storage and finders."""
