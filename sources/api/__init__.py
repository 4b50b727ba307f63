"""The JSON API: endpoints, response schemas, rate limits, and the middleware that keeps its answers JSON."""
