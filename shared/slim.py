"""Keeps libraries a service never uses out of its process.

Each service's `__main__` imports this module before anything else. Two of our dependencies
import an optional library whenever it is installed, and both are installed for other reasons:

- nats-py imports aiohttp for its WebSocket transport; the bus connects over TCP
  (`nats://` or `tls://`, checked by the settings). aiohttp is there for the kubernetes package.
- structlog imports rich to draw tracebacks on the console; services log JSON by default and
  fall back to plain tracebacks on the console. rich is there for the CLI.

A `None` entry in `sys.modules` makes `import <name>` raise ImportError, which both treat as "not
installed". It saves about 11 MB of idle RSS per service (docs/performance.md, item 8).
"""

from __future__ import annotations

import sys

UNUSED = ("aiohttp", "rich")

for _name in UNUSED:
    sys.modules.setdefault(_name, None)  # type: ignore[arg-type]
