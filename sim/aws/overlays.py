"""Corrections to moto's answers where moto serves the call but gets the world wrong.

- NAT gateways: moto's are `available` at once; AWS's are `pending` for a minute or two.
  Until the profile's `nat_gateway_create` has passed, a new gateway reads `pending`.
- FSx for Lustre: moto returns no `Lifecycle`, `CreationTime`, `OwnerId`, `VpcId` nor the
  Lustre `MountName` that HyperPod's FsxLustreConfig needs. They are filled in, and a new file
  system is `CREATING` until `fsx_create` has passed, then `AVAILABLE`.
"""

from __future__ import annotations

import json
import secrets
import string
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable
from typing import Any

from sim.aws import moto_state
from sim.aws.context import SimContext
from sim.aws.wire import AwsRequest

Patch = Callable[[AwsRequest, bytes], bytes]


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


class Overlays:
    """Per-operation rewrites of moto's successful responses."""

    def __init__(self, ctx: SimContext) -> None:
        self.ctx = ctx
        self._nat_created: dict[str, float] = {}
        self._fsx: dict[str, dict[str, Any]] = {}
        self._patches: dict[tuple[str, str], Patch] = {
            ("ec2", "CreateNatGateway"): self._nat,
            ("ec2", "DescribeNatGateways"): self._nat,
            ("fsx", "CreateFileSystem"): self._fsx_patch,
            ("fsx", "DescribeFileSystems"): self._fsx_patch,
        }

    def patch(self, req: AwsRequest, body: bytes) -> bytes:
        patch = self._patches.get((str(req.service), str(req.operation)))
        if patch is None:
            return body
        with self.ctx.lock:
            return patch(req, body)

    # ---- NAT gateways --------------------------------------------------------------------

    def _nat(self, req: AwsRequest, body: bytes) -> bytes:
        try:
            root = ET.fromstring(body)
        except ET.ParseError:
            return body
        namespace = root.tag[1:].split("}", 1)[0] if root.tag.startswith("{") else ""
        ET.register_namespace("", namespace)
        now = time.monotonic()
        changed = False
        for element in root.iter():
            children = {_local(child.tag): child for child in element}
            gateway_id, state = children.get("natGatewayId"), children.get("state")
            if gateway_id is None or state is None or gateway_id.text is None:
                continue
            if req.operation == "CreateNatGateway":
                self._nat_created.setdefault(gateway_id.text, now)
            created = self._nat_created.get(gateway_id.text)
            young = created is not None and now - created < self.ctx.profile.nat_gateway_create
            if state.text == "available" and young:
                state.text = "pending"
                changed = True
        return ET.tostring(root, encoding="utf-8", xml_declaration=True) if changed else body

    # ---- FSx -----------------------------------------------------------------------------

    def _fsx_patch(self, req: AwsRequest, body: bytes) -> bytes:
        try:
            document = json.loads(body)
        except ValueError:
            return body
        systems = (
            [document["FileSystem"]]
            if "FileSystem" in document
            else document.get("FileSystems", [])
        )
        for system in systems:
            self._fsx_details(system)
        return json.dumps(document).encode()

    def _fsx_details(self, system: dict[str, Any]) -> None:
        file_system_id = system.get("FileSystemId")
        if not file_system_id:
            return
        extra = self._fsx.get(file_system_id)
        if extra is None:
            subnets = system.get("SubnetIds") or []
            info = (
                moto_state.subnet(self.ctx.account_id, self.ctx.region, subnets[0])
                if subnets
                else None
            )
            extra = {
                "created": time.monotonic(),
                "CreationTime": time.time(),
                "OwnerId": self.ctx.account_id,
                "VpcId": info.vpc_id if info else None,
                "MountName": "".join(
                    secrets.choice(string.ascii_lowercase + string.digits) for _ in range(8)
                ),
            }
            self._fsx[file_system_id] = extra
        young = time.monotonic() - extra["created"] < self.ctx.profile.fsx_create
        system["Lifecycle"] = "CREATING" if young else "AVAILABLE"
        system.setdefault("CreationTime", extra["CreationTime"])
        system.setdefault("OwnerId", extra["OwnerId"])
        if extra["VpcId"]:
            system.setdefault("VpcId", extra["VpcId"])
        if system.get("FileSystemType") == "LUSTRE":
            lustre = system.setdefault("LustreConfiguration", {})
            lustre.setdefault("MountName", extra["MountName"])
