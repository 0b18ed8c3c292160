"""The UI's MIG profiles per instance type (gpu_share.js) are the contract's (MIG_PROFILES)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from shared.contracts.gpu import MIG_PROFILES

SOURCE = Path(__file__).parents[2] / "services/gateway/gateway/ui/gpu_share.js"


def ui_table(text: str) -> dict[str, tuple[str, ...]]:
    """The MIG_PROFILES object of gpu_share.js, its named profile lists resolved."""
    lists = {
        name: tuple(json.loads(items))
        for name, items in re.findall(r"^const (\w+) = (\[[^\]]*\]);$", text, re.M)
    }
    body = re.search(r"^export const MIG_PROFILES = \{(.*?)^\};", text, re.M | re.S)
    assert body is not None, "gpu_share.js has no MIG_PROFILES object"
    return {t: lists[n] for t, n in re.findall(r'"([^"]+)": (\w+),', body.group(1))}


def test_the_ui_offers_the_contracts_mig_profiles() -> None:
    assert ui_table(SOURCE.read_text()) == MIG_PROFILES
