"""Dashboards and alert rules: lint, promtool, and a real Prometheus (``promql.py``)."""
