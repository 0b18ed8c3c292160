"""The pod terminal's session over the bus, between the gateway's WebSocket and the workload-svc
replica that holds the `pods/exec` stream (`tty=true`).

The gateway picks a session id, listens on `tty_subject(id, "out")` and asks
`qry.workload.tty` to open it; the replica that answers holds the exec stream and listens on
`tty_subject(id, "in")`. In: `{"data": "<keystrokes>"}`, `{"resize": {"rows", "cols"}}`,
`{"close": true}`. Out: `{"output": "<terminal output>"}`, then `{"closed": true,
"exit_code": n | null, "reason"}`. Nothing typed or shown is stored.
"""

from __future__ import annotations

import re
from typing import Literal

SESSION = re.compile(r"^[a-f0-9]{32}$")  # uuid4().hex
MAX_INPUT = 64 * 1024  # bytes of keystrokes one message may carry (a paste)
MIN_SIZE, MAX_ROWS, MAX_COLS = 2, 500, 1000


def tty_subject(session: str, direction: Literal["in", "out"]) -> str:
    return f"tty.{session}.{direction}"
