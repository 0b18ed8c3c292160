"""One boto3 session per process: every AWS client a service makes comes from it.

A boto3 session resolves credentials and loads service models once; clients made from one are
thread-safe, but making them is not (boto3's guide, "Multithreading or multiprocessing with
clients"), so `client` makes them under a lock. Region and endpoint are per client.
"""

from __future__ import annotations

import threading
from typing import Any

import boto3
from botocore.config import Config

_lock = threading.Lock()
_session: boto3.session.Session | None = None


def session() -> boto3.session.Session:
    """The process's session, made on first use (credentials from the environment, an
    instance profile or AWS_PROFILE, as boto3 finds them)."""
    global _session
    with _lock:
        if _session is None:
            _session = boto3.session.Session()
        return _session


def client(
    service: str,
    region: str,
    endpoint_url: str | None = None,
    config: Config | None = None,
    *,
    of: boto3.session.Session | None = None,
) -> Any:
    """A new client for `service` in `region`, of the process's session (or of `of`)."""
    made = of or session()
    with _lock:
        return made.client(service, region_name=region, endpoint_url=endpoint_url, config=config)
