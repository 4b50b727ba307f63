"""Operating the service: liveness and readiness probes, Prometheus metrics (docs/operations.md)."""
