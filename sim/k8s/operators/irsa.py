"""IRSA (the EKS pod identity webhook): pods of a service account annotated with
`eks.amazonaws.com/role-arn` get the role's environment and projected token volume."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sim.k8s.registry import ResourceType
from sim.k8s.store import Obj

if TYPE_CHECKING:
    from sim.k8s.server import ApiServer

ROLE_ANNOTATION = "eks.amazonaws.com/role-arn"
TOKEN_DIR = "/var/run/secrets/eks.amazonaws.com/serviceaccount"


def irsa_admission(server: ApiServer) -> object:
    def admit(rt: ResourceType, obj: Obj, old: Obj | None) -> None:
        if rt.key != "pods" or old is not None:
            return
        ns = obj["metadata"].get("namespace") or ""
        sa_name = obj["spec"].get("serviceAccountName") or "default"
        sa = server.store.get("serviceaccounts", ns, sa_name)
        role = ((sa or {}).get("metadata", {}).get("annotations") or {}).get(ROLE_ANNOTATION)
        if not role:
            return
        env = [
            {"name": "AWS_STS_REGIONAL_ENDPOINTS", "value": "regional"},
            {"name": "AWS_DEFAULT_REGION", "value": server.region},
            {"name": "AWS_REGION", "value": server.region},
            {"name": "AWS_ROLE_ARN", "value": role},
            {"name": "AWS_WEB_IDENTITY_TOKEN_FILE", "value": f"{TOKEN_DIR}/token"},
        ]
        for container in (obj["spec"].get("containers") or []) + (
            obj["spec"].get("initContainers") or []
        ):
            have = {e.get("name") for e in container.get("env") or []}
            container["env"] = (container.get("env") or []) + [
                e for e in env if e["name"] not in have
            ]
            mounts = container.setdefault("volumeMounts", [])
            if not any(m.get("name") == "aws-iam-token" for m in mounts):
                mounts.append({"name": "aws-iam-token", "mountPath": TOKEN_DIR, "readOnly": True})
        volumes = obj["spec"].setdefault("volumes", [])
        if not any(v.get("name") == "aws-iam-token" for v in volumes):
            volumes.append(
                {
                    "name": "aws-iam-token",
                    "projected": {
                        "defaultMode": 420,
                        "sources": [
                            {
                                "serviceAccountToken": {
                                    "audience": "sts.amazonaws.com",
                                    "expirationSeconds": 86400,
                                    "path": "token",
                                }
                            }
                        ],
                    },
                }
            )

    return admit
