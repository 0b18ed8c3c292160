"""EKS add-ons: Create/Describe/List/Update/DeleteAddon, their versions and configuration
schemas."""

from __future__ import annotations

import contextlib
import uuid
from typing import Any

import yaml
from jsonschema import Draft7Validator

from sim.aws import eks_catalog
from sim.aws.eks.base import EksBase
from sim.aws.eks.model import EksCluster, page_of, public_view
from sim.aws.errors import AwsError


class AddonOps(EksBase):
    """Add-on operations."""

    def create_addon(self, p: dict[str, Any]) -> dict[str, Any]:
        cluster = self._active(p["clusterName"])
        name = p["addonName"]
        if name not in eks_catalog.ADDONS:
            raise AwsError("InvalidParameterException", f"Addon {name} specified is not supported")
        if name in cluster.addons:
            token = p.get("clientRequestToken")
            if token and cluster.addons[name].get("_token") == token:
                return {"addon": public_view(cluster.addons[name])}
            raise AwsError(
                "ResourceInUseException",
                f"Addon already exists with name: {name}",
                extra={"addonName": name},
            )
        version = p.get("addonVersion") or eks_catalog.default_addon_version(name)
        if version not in eks_catalog.ADDONS[name][2]:
            raise AwsError(
                "InvalidParameterException", f"Addon version specified is not supported: {version}"
            )
        if p.get("serviceAccountRoleArn"):
            self._check_role(p["serviceAccountRoleArn"])
        check_configuration(name, p.get("configurationValues"))
        _type, publisher, _ = eks_catalog.ADDONS[name]
        addon: dict[str, Any] = {
            "addonName": name,
            "clusterName": cluster.name,
            "status": "CREATING",
            "addonVersion": version,
            "health": {"issues": []},
            "addonArn": self.ctx.arn("eks", f"addon/{cluster.name}/{name}/{uuid.uuid4()}"),
            "createdAt": self.ctx.now(),
            "modifiedAt": self.ctx.now(),
            "serviceAccountRoleArn": p.get("serviceAccountRoleArn"),
            "tags": p.get("tags") or {},
            "publisher": publisher,
            "owner": "aws",
            "configurationValues": p.get("configurationValues"),
            "podIdentityAssociations": [],
            "_token": p.get("clientRequestToken"),
        }
        for association in p.get("podIdentityAssociations") or []:
            created = self._put_pod_identity(
                cluster,
                {
                    "namespace": "kube-system",
                    "serviceAccount": association["serviceAccount"],
                    "roleArn": association["roleArn"],
                },
                owner=addon["addonArn"],
            )
            addon["podIdentityAssociations"].append(created["associationArn"])
        cluster.addons[name] = addon

        def ready() -> None:
            if cluster.addons.get(name) is addon and addon["status"] == "CREATING":
                missing = missing_prerequisites(cluster, name)
                if missing:
                    addon["status"] = "CREATE_FAILED"
                    addon["health"] = {"issues": [_missing_issue(name, missing)]}
                    return
                if self.ctx.kube is not None and cluster.kube_started:
                    # What the add-on installs appears in the cluster as it does on EKS.
                    with contextlib.suppress(ValueError):
                        self.ctx.kube.install(cluster.name, name)
                addon["status"] = "ACTIVE"

        self._later(self.ctx.profile.eks_addon_install, ready)
        return {"addon": public_view(addon)}

    def _addon(self, p: dict[str, Any]) -> tuple[EksCluster, dict[str, Any]]:
        cluster = self._get(p["clusterName"])
        addon = cluster.addons.get(p["addonName"])
        if addon is None:
            raise AwsError(
                "ResourceNotFoundException",
                f"No addon: {p['addonName']} found in cluster: {cluster.name}",
                extra={"clusterName": cluster.name, "addonName": p["addonName"]},
            )
        return cluster, addon

    def describe_addon(self, p: dict[str, Any]) -> dict[str, Any]:
        return {"addon": public_view(self._addon(p)[1])}

    def list_addons(self, p: dict[str, Any]) -> dict[str, Any]:
        names, token = page_of(sorted(self._get(p["clusterName"]).addons), p)
        return {"addons": names, "nextToken": token}

    def update_addon(self, p: dict[str, Any]) -> dict[str, Any]:
        cluster, addon = self._addon(p)
        if addon["status"] not in ("ACTIVE", "DEGRADED", "UPDATE_FAILED"):
            raise AwsError(
                "ResourceInUseException",
                f"Addon {addon['addonName']} is {addon['status']}",
                extra={"addonName": addon["addonName"]},
            )
        version = p.get("addonVersion") or addon["addonVersion"]
        if version not in eks_catalog.ADDONS[addon["addonName"]][2]:
            raise AwsError(
                "InvalidParameterException", f"Addon version specified is not supported: {version}"
            )
        check_configuration(addon["addonName"], p.get("configurationValues"))
        addon["status"] = "UPDATING"
        params = [{"type": "AddonVersion", "value": version}]
        if p.get("configurationValues") is not None:
            params.append({"type": "ConfigurationValues", "value": p["configurationValues"]})
        update: dict[str, Any] = {
            "id": str(uuid.uuid4()),
            "status": "InProgress",
            "type": "AddonUpdate",
            "params": params,
            "createdAt": self.ctx.now(),
            "errors": [],
        }
        cluster.updates[update["id"]] = update

        def done() -> None:
            addon["addonVersion"] = version
            for key in ("serviceAccountRoleArn", "configurationValues"):
                if p.get(key) is not None:
                    addon[key] = p[key]
            addon["status"] = "ACTIVE"
            addon["modifiedAt"] = self.ctx.now()
            update["status"] = "Successful"

        self._later(self.ctx.profile.eks_addon_install, done)
        return {"update": update}

    def delete_addon(self, p: dict[str, Any]) -> dict[str, Any]:
        cluster, addon = self._addon(p)
        addon["status"] = "DELETING"

        def gone() -> None:
            if cluster.addons.get(addon["addonName"]) is addon:
                del cluster.addons[addon["addonName"]]
                for association in list(cluster.pod_identities.values()):
                    if association.get("ownerArn") == addon["addonArn"]:
                        del cluster.pod_identities[association["associationId"]]

        self._later(self.ctx.profile.eks_addon_install, gone)
        return {"addon": public_view(addon)}

    def describe_addon_versions(self, p: dict[str, Any]) -> dict[str, Any]:
        names = [p["addonName"]] if p.get("addonName") else sorted(eks_catalog.ADDONS)
        result = []
        for name in names:
            if name not in eks_catalog.ADDONS:
                continue
            kind, publisher, _ = eks_catalog.ADDONS[name]
            if p.get("types") and kind not in p["types"]:
                continue
            if p.get("publishers") and publisher not in p["publishers"]:
                continue
            result.append(
                {
                    "addonName": name,
                    "type": kind,
                    "addonVersions": eks_catalog.addon_versions(name, p.get("kubernetesVersion")),
                    "publisher": publisher,
                    "owner": "aws",
                }
            )
        page, token = page_of(result, p)
        return {"addons": page, "nextToken": token}

    def describe_addon_configuration(self, p: dict[str, Any]) -> dict[str, Any]:
        name = p["addonName"]
        if name not in eks_catalog.ADDONS or p["addonVersion"] not in eks_catalog.ADDONS[name][2]:
            raise AwsError(
                "ResourceNotFoundException", f"Addon {name} version {p['addonVersion']} not found"
            )
        return {
            "addonName": name,
            "addonVersion": p["addonVersion"],
            "configurationSchema": eks_catalog.addon_configuration_schema_text(name),
            "podIdentityConfiguration": [],
        }


def check_configuration(addon: str, values: str | None) -> None:
    """configurationValues must be JSON or YAML that satisfies the add-on's configuration schema
    (the one DescribeAddonConfiguration returns), else InvalidParameterException, as the EKS
    User Guide describes ("Amazon EKS add-on configuration", advanced configuration:
    https://docs.aws.amazon.com/eks/latest/userguide/kubernetes-field-management.html and
    https://docs.aws.amazon.com/eks/latest/APIReference/API_CreateAddon.html)."""
    if values is None or values.strip() == "":
        return
    try:
        document = yaml.safe_load(values)  # YAML is a superset of JSON: one parser reads both
    except yaml.YAMLError:
        document = None
    if not isinstance(document, dict):
        raise AwsError(
            "InvalidParameterException",
            "ConfigurationValue provided in request is not supported: the configuration values "
            "must be a JSON or YAML object",
            extra={"addonName": addon},
        )
    errors = sorted(
        Draft7Validator(eks_catalog.addon_configuration_schema(addon)).iter_errors(document),
        key=lambda e: list(e.absolute_path),
    )
    if errors:
        found = "; ".join(
            f"{'$.' + '.'.join(str(p) for p in e.absolute_path) if e.absolute_path else '$'}: "
            f"{e.message}"
            for e in errors
        )
        raise AwsError(
            "InvalidParameterException",
            "ConfigurationValue provided in request is not supported: Json schema validation "
            f"failed with error: [{found}]",
            extra={"addonName": addon},
        )


def missing_prerequisites(cluster: EksCluster, addon: str) -> list[str]:
    """The add-ons `addon` needs that the cluster does not have (see ADDON_PREREQUISITES)."""
    return [
        needed
        for needed in eks_catalog.ADDON_PREREQUISITES.get(addon, ())
        if (cluster.addons.get(needed) or {}).get("status")
        not in ("ACTIVE", "CREATING", "UPDATING")
    ]


def _missing_issue(addon: str, missing: list[str]) -> dict[str, Any]:
    return {
        "code": "K8sResourceNotFound",
        "message": f"Add-on {addon} requires {', '.join(missing)} to be installed first.",
        "resourceIds": missing,
    }
