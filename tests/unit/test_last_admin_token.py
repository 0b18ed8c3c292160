"""The refusal to revoke (or rotate down) the last live admin token: the reason, the way out,
and with OIDC configured, that the rule counts tokens only."""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest

from gateway.auth import TokenVerifier
from gateway.routes.tokens import _last_admin


class _Listener:
    def listen(self, channel: str, noticed: Callable[[str | None], None]) -> None:
        self.channel = channel


def _request(oidc: Any) -> Any:
    state = SimpleNamespace(tokens=TokenVerifier(pool=None, oidc=oidc), broadcaster=_Listener())
    return SimpleNamespace(app=SimpleNamespace(state=state))


@pytest.mark.parametrize("oidc", [None, object()])
def test_the_refusal_names_the_reason_and_the_way_out(oidc: Any) -> None:
    error = _last_admin(_request(oidc), "admin", "revoking it", "revoke")
    assert (error.status, error.code) == (409, "conflict")
    assert error.message.startswith(
        "token admin is the last live admin token: revoking it would leave no admin token"
    )
    assert error.hint is not None and error.hint.startswith("create another admin token first")
    assert ("this rule is about tokens only" in error.message) is (oidc is not None)
