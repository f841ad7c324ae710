"""Prometheus metrics of one app (its own registry, so two apps in a process never collide)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

__all__ = ["Metrics"]


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "registry_http_requests",
            "HTTP requests by route template, method and status.",
            ["route", "method", "status"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "registry_http_request_duration_seconds",
            "HTTP request latency by route template.",
            ["route"],
            registry=self.registry,
            buckets=(
                0.0005,
                0.001,
                0.0025,
                0.005,
                0.01,
                0.025,
                0.05,
                0.1,
                0.25,
                0.5,
                1,
                2.5,
                10,
                60,
            ),
        )
        self.publishes = Counter(
            "registry_publishes",
            "Publish requests by outcome (created, existing, refused, invalid).",
            ["outcome"],
            registry=self.registry,
        )
        self.classification = Histogram(
            "registry_classification_seconds",
            "Time the publishing rule spent classifying and searching routes.",
            registry=self.registry,
            buckets=(0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 1),
        )
        self.waiters = Gauge(
            "registry_toolset_longpoll_waiters",
            "Requests currently long-polling a toolset.",
            registry=self.registry,
        )
        self.hangups = Counter(
            "registry_toolset_longpoll_hangups",
            "Long-polls whose client hung up before the answer (logged as 304).",
            registry=self.registry,
        )
        self.body_timeouts = Counter(
            "registry_http_body_timeouts",
            "Requests cut off (408) because their body did not arrive in time.",
            registry=self.registry,
        )
        self.toolset_builds = Counter(
            "registry_toolset_builds",
            "Toolset payloads built from the database.",
            registry=self.registry,
        )
        self.toolset_build_seconds = Histogram(
            "registry_toolset_build_seconds",
            "Time to build a toolset payload (off the event loop), by kind: every tool "
            "of the namespace (full) or the changed ones (tools).",
            ["kind"],
            registry=self.registry,
            buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10),
        )
        self.limit_reached = Counter(
            "registry_limit_reached",
            "Times a limit was met, by limit: waiters (a long-poll refused, 503), "
            "waiters_per_token (429), connections (connections found waiting to be "
            "accepted, checked each second), analysis_per_token (429), analysis_workers "
            "(503).",
            ["limit"],
            registry=self.registry,
        )
        self.limits = Gauge(
            "registry_limit",
            "The limits in force, by name (docs/security.md).",
            ["limit"],
            registry=self.registry,
        )
        self.console_waiters = Gauge(
            "registry_console_longpoll_waiters",
            "Console live pages currently long-polling (counted with the toolset's).",
            registry=self.registry,
        )
        self.analysis_running = Gauge(
            "registry_analysis_calls",
            "Analysis calls (classification, validation, diff) running or waiting for a worker.",
            registry=self.registry,
        )
        self.analysis_over_budget = Counter(
            "registry_analysis_over_budget",
            "Analysis calls stopped at the time budget (422 analysis-over-budget).",
            registry=self.registry,
        )

    def render(self) -> bytes:
        return generate_latest(self.registry)
