"""Logs, traces and request metrics."""
