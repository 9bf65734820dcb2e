"""Prometheus metrics of one gateway process, in a registry of its own (no globals)."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector
from sqlalchemy.orm import Session, sessionmaker

from gateway.repositories.jobs.queries import count_by_state_and_site


class _JobsByState(Collector):
    """Jobs per (state, site), read from the database at scrape time."""

    def __init__(self, sessions: sessionmaker[Session]) -> None:
        self._sessions = sessions

    def collect(self) -> Iterator[GaugeMetricFamily]:
        gauge = GaugeMetricFamily("gridgate_jobs", "Jobs by state and site",
                                  labels=["state", "site"])
        with self._sessions() as session:
            for state, site, count in count_by_state_and_site(session.connection()):
                gauge.add_metric([state, site or ""], count)
        yield gauge


class Metrics:
    def __init__(self, sessions: sessionmaker[Session]) -> None:
        self.registry = CollectorRegistry()
        self.http_requests = Counter(
            "gridgate_http_requests", "HTTP requests", ["method", "route", "status"],
            registry=self.registry)
        self.http_latency = Histogram(
            "gridgate_http_request_seconds", "HTTP request latency", ["route"],
            registry=self.registry)
        self.submissions = Counter(
            "gridgate_site_submissions", "Jobs submitted to a site", ["site", "outcome"],
            registry=self.registry)
        self.status_calls = Counter(
            "gridgate_site_status_calls", "Status calls made to a site", ["site"],
            registry=self.registry)
        self.double_starts = Counter(
            "gridgate_hedge_double_starts",
            "Attempts seen running after another attempt of their job had started",
            registry=self.registry)
        self.transitions = Counter(
            "gridgate_job_transitions", "Job state changes made by the worker", ["to"],
            registry=self.registry)
        self.registry.register(_JobsByState(sessions))
