"""deploy/cloudformation/hyperpilot.yaml: cfn-lint is clean, the parameters and Rules reject bad
input, and the stack deploys in the simulated world (moto's CloudFormation) with the resources the
template declares.

What moto's CloudFormation does not do, and how these tests cover it instead:
- It skips resource types it does not implement (with a warning) and still reports
  CREATE_COMPLETE: here AWS::SecretsManager::Secret, AWS::S3::BucketPolicy,
  AWS::EC2::SecurityGroupEgress and, for Target=eks, AWS::EKS::PodIdentityAssociation,
  AWS::EKS::AccessEntry and AWS::EKS::Addon. `test_moto_skips_only_the_known_types` pins that
  list; the skipped resources are checked in the template instead
  (`test_skipped_resources_as_declared`, `test_eks_resources_as_declared`).
- It does not check parameter AllowedPattern/AllowedValues/Min/Max nor evaluate Rules (a stack
  with invalid parameters is created). `test_parameter_constraints` and `test_rules` evaluate them
  against the template here.
- It creates the resources it knows but reads only some of their properties. Those it drops
  here are listed in MOTO_IGNORED_PROPERTIES and checked in the template by
  `test_properties_moto_ignores_are_declared`: the security group's inline SecurityGroupEgress
  (moto keeps its default allow-all egress); the instance's SecurityGroupIds, MetadataOptions
  (IMDSv2) and CreationPolicy; the volume's Encrypted, VolumeType and Tags; the bucket's public access
  block, versioning, lifecycle and ownership controls (moto applies only encryption and tags);
  the role's ManagedPolicyArns (AmazonSSMManagedInstanceCore); the RDS instance's
  VPCSecurityGroups and DeletionProtection.
- It returns an inline role policy as the repr of a Python dict; `inline_policy` reads it.
- It reads the short form `!Condition X` as an unevaluated "Fn::Condition" and keeps an `!If`
  branch of AWS::NoValue inside a list as a null: the template names conditions in the long form
  and switches whole lists (the operator role's Policies) rather than list elements, so the eks
  variant deploys here as it would in CloudFormation.
"""

from __future__ import annotations

import ast
import base64
import json
import re
import subprocess
import sys
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import pytest
from deploy_support import TEMPLATE_PATH, load_template

REGION = "us-east-1"
# A moto account of their own: moto keeps one in-process state per account, so these stacks
# neither see nor disturb what other tests create in moto's default account (123456789012).
ACCOUNT = "111122223333"
PRINCIPAL = f"arn:aws:iam::{ACCOUNT}:role/PlatformAdmins"
EXPECTED_SKIPPED_TYPES = {
    "AWS::SecretsManager::Secret",
    "AWS::S3::BucketPolicy",
    "AWS::EC2::SecurityGroupEgress",
    "AWS::EKS::PodIdentityAssociation",
    "AWS::EKS::AccessEntry",
    "AWS::EKS::Addon",
}
CFN_LINT = Path(sys.executable).parent / "cfn-lint"


# ---------------------------------------------------------------------------- cfn-lint


def run_cfn_lint(
    path: Path, parameters: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    # -c I adds the informational rules, so even those report nothing.
    values = [f"{k}={v}" for k, v in (parameters or {}).items()]
    return subprocess.run(
        [
            str(CFN_LINT),
            "--format",
            "parseable",
            "-c",
            "I",
            *(["--parameters", *values] if values else []),
            "--",
            str(path),
        ],
        capture_output=True,
        text=True,
        timeout=180,
    )


EKS_LINT_PARAMETERS = {
    "AllowedPrincipalArn": PRINCIPAL,
    "Target": "eks",
    "ManagementClusterName": "hp-management",
    "ClusterSecurityGroupId": "sg-0123456789abcdef0",
    "InstallPodIdentityAgent": "true",
    "DatabaseMode": "rds",
    "VpcId": "vpc-0123456789abcdef0",
    "PrivateSubnetId": "subnet-0123456789abcdef0",
    "SecondPrivateSubnetId": "subnet-0fedcba9876543210",
}


@pytest.mark.parametrize(
    "parameters",
    [None, {"AllowedPrincipalArn": PRINCIPAL, "Target": "instance"}, EKS_LINT_PARAMETERS],
    ids=["template", "instance", "eks"],
)
def test_cfn_lint_is_clean(parameters: dict[str, str] | None) -> None:
    assert CFN_LINT.is_file(), f"cfn-lint is not installed next to {sys.executable}"
    result = run_cfn_lint(TEMPLATE_PATH, parameters)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip() == ""


def test_cfn_lint_exceptions_are_the_documented_one(template: dict[str, Any]) -> None:
    ignored = {
        name: resource["Metadata"]["cfn-lint"]["config"]["ignore_checks"]
        for name, resource in template["Resources"].items()
        if "cfn-lint" in resource.get("Metadata", {})
    }
    # W1030 on the instance's SubnetId, and on the EKS resources' ManagementClusterName and the
    # database's ingress from ClusterSecurityGroupId (empty defaults the Rules refuse with
    # Target=eks): see the comments in the template and deploy/cloudformation/README.md.
    assert ignored == {
        "Instance": ["W1030"],
        "ControlPlanePodIdentity": ["W1030"],
        "PodIdentityAgentAddon": ["W1030"],
        "OperatorAccessEntry": ["W1030"],
        "DatabaseIngressFromCluster": ["W1030"],
    }
    assert "cfn-lint" not in template.get("Metadata", {})


def test_cfn_lint_fails_a_broken_template(tmp_path: Path) -> None:
    broken = TEMPLATE_PATH.read_text().replace(
        "      GroupDescription: Hyperpilot management instance - no ingress, HTTPS egress only\n",
        "",
    )
    assert broken != TEMPLATE_PATH.read_text()
    path = tmp_path / "broken.yaml"
    path.write_text(broken)
    result = run_cfn_lint(path)
    assert result.returncode != 0
    assert "E3003" in result.stdout  # the required property is missing


# ---------------------------------------------------------------------------- parameters and Rules


def constraint_error(spec: dict[str, Any], value: str) -> str | None:
    """What CloudFormation checks for a parameter value, or None when it passes."""
    if "AllowedValues" in spec and value not in [str(v) for v in spec["AllowedValues"]]:
        return "not an allowed value"
    if "AllowedPattern" in spec and re.fullmatch(spec["AllowedPattern"], value) is None:
        return "does not match AllowedPattern"
    if spec["Type"] == "Number":
        number = float(value)
        if "MinValue" in spec and number < float(spec["MinValue"]):
            return "below MinValue"
        if "MaxValue" in spec and number > float(spec["MaxValue"]):
            return "above MaxValue"
    return None


VALID = {
    "EnvironmentName": ["hyperpilot", "hp-prod", "abc"],
    "AllowedPrincipalArn": [
        PRINCIPAL,
        f"arn:aws:iam::{ACCOUNT}:user/alice",
        f"arn:aws:iam::{ACCOUNT}:root",
    ],
    "InstanceType": ["t3.large", "m7i.xlarge"],
    "ImageRegistry": [
        "",
        f"{ACCOUNT}.dkr.ecr.{REGION}.amazonaws.com/hyperpilot",
        "ghcr.io/acme/hyperpilot",
        "registry.local:5000",
    ],
    "ImageTag": ["0.1.0", "sha-4f2a9c1", "latest"],
    "VpcId": ["", "vpc-0123456789abcdef0"],
    "PrivateSubnetId": ["", "subnet-0123abcd"],
    "VpcCidr": ["10.42.0.0/16", "172.31.0.0/20"],
    "DatabaseMode": ["local", "rds"],
    "DbEngineVersion": ["16.13", "16.4"],
    "DataVolumeSize": ["20", "2000"],
    "LogRetentionDays": ["30", "365"],
    "Target": ["instance", "eks"],
    "ManagementClusterName": ["", "hp-management", "Mgmt_01", "a" * 100],
    "ClusterSecurityGroupId": ["", "sg-0123abcd", "sg-0123456789abcdef0"],
    "InstallPodIdentityAgent": ["true", "false"],
}
INVALID = {
    "EnvironmentName": ["Hyperpilot", "hp_prod", "ab", "-hp", "hp-", "a" * 21],
    "AllowedPrincipalArn": [
        "",
        "*",
        "arn:aws:iam::123:role/x",
        f"arn:aws:sts::{ACCOUNT}:assumed-role/x/y",
    ],
    "InstanceType": ["t2.micro", "p5.48xlarge"],
    "ImageRegistry": ["https://registry.example.com", "Registry.Example.com", "host/"],
    "ImageTag": ["", "-leading-dash", "a" * 129, "tag with space"],
    "VpcId": ["vpc-xyz", "subnet-0123abcd"],
    "PrivateSubnetId": ["subnet-", "vpc-0123abcd"],
    "VpcCidr": ["10.0.0.0/8", "10.0.0.0/25", "10.0.0.0"],
    "DatabaseMode": ["aurora", ""],
    "DbEngineVersion": ["15.8", "16"],
    "DataVolumeSize": ["19", "2001"],
    "LogRetentionDays": ["3", "400"],
    "Target": ["", "ec2", "EKS", "kubernetes"],
    "ManagementClusterName": ["-mgmt", "mgmt cluster", "mgmt.prod", "a" * 101],
    "ClusterSecurityGroupId": ["sg-", "sg-XYZ12345", "vpc-0123abcd"],
    "InstallPodIdentityAgent": ["yes", ""],
}


def test_parameter_constraints(template: dict[str, Any]) -> None:
    parameters = template["Parameters"]
    for name, values in VALID.items():
        for value in values:
            assert constraint_error(parameters[name], value) is None, (name, value)
    for name, values in INVALID.items():
        for value in values:
            assert constraint_error(parameters[name], value) is not None, (name, value)
    for name, spec in parameters.items():
        assert spec.get("Description"), f"{name} has no description"
        if "AllowedPattern" in spec or "MinValue" in spec:
            assert spec.get("ConstraintDescription"), f"{name} has no constraint description"
        if "Default" in spec:
            assert constraint_error(spec, str(spec["Default"])) is None, (
                f"{name} default is invalid"
            )


def evaluate(expression: Any, values: dict[str, str]) -> Any:
    """The intrinsic functions Rules use here: Ref, Fn::Equals, Fn::Not, Fn::And, Fn::Or."""
    if isinstance(expression, dict):
        ((function, argument),) = expression.items()
        if function == "Ref":
            return values[argument]
        if function == "Fn::Equals":
            return evaluate(argument[0], values) == evaluate(argument[1], values)
        if function == "Fn::Not":
            return not evaluate(argument[0], values)
        if function == "Fn::And":
            return all(evaluate(a, values) for a in argument)
        if function == "Fn::Or":
            return any(evaluate(a, values) for a in argument)
        raise AssertionError(f"unexpected function in Rules: {function}")
    return expression


def failed_rules(template: dict[str, Any], overrides: dict[str, str]) -> set[str]:
    values = {name: str(spec.get("Default", "")) for name, spec in template["Parameters"].items()}
    values.update(overrides)
    failed = set()
    for name, rule in template["Rules"].items():
        if "RuleCondition" in rule and not evaluate(rule["RuleCondition"], values):
            continue
        if not all(evaluate(a["Assert"], values) for a in rule["Assertions"]):
            failed.add(name)
    return failed


def test_rules(template: dict[str, Any]) -> None:
    vpc, a, b = "vpc-0123456789abcdef0", "subnet-0123456789abcdef0", "subnet-0fedcba9876543210"
    assert failed_rules(template, {}) == set()
    assert failed_rules(template, {"DatabaseMode": "rds"}) == set()
    assert failed_rules(template, {"VpcId": vpc, "PrivateSubnetId": a}) == set()
    assert (
        failed_rules(
            template,
            {"VpcId": vpc, "PrivateSubnetId": a, "SecondPrivateSubnetId": b, "DatabaseMode": "rds"},
        )
        == set()
    )
    assert failed_rules(template, {"PrivateSubnetId": a}) == {"ExistingSubnetNeedsVpc"}
    assert failed_rules(template, {"VpcId": vpc}) == {"ExistingVpcNeedsSubnet"}
    assert failed_rules(template, {"VpcId": vpc, "PrivateSubnetId": a, "DatabaseMode": "rds"}) == {
        "RdsInExistingVpcNeedsTwoSubnets"
    }
    assert failed_rules(
        template,
        {"VpcId": vpc, "PrivateSubnetId": a, "SecondPrivateSubnetId": a, "DatabaseMode": "rds"},
    ) == {"RdsInExistingVpcNeedsTwoSubnets"}


def test_rules_for_the_eks_target(template: dict[str, Any]) -> None:
    vpc, a, b = "vpc-0123456789abcdef0", "subnet-0123456789abcdef0", "subnet-0fedcba9876543210"
    eks = {
        "Target": "eks",
        "ManagementClusterName": "hp-management",
        "ClusterSecurityGroupId": "sg-0123456789abcdef0",
        "DatabaseMode": "rds",
        "VpcId": vpc,
        "PrivateSubnetId": a,
        "SecondPrivateSubnetId": b,
    }
    assert failed_rules(template, eks) == set()
    # The cluster's name and security group are ignored with Target=instance.
    assert (
        failed_rules(template, {"ManagementClusterName": "x", "ClusterSecurityGroupId": ""})
        == set()
    )
    assert failed_rules(template, {**eks, "ManagementClusterName": ""}) == {
        "EksNeedsManagementCluster"
    }
    assert failed_rules(template, {**eks, "ClusterSecurityGroupId": ""}) == {
        "EksNeedsManagementCluster"
    }
    # No VPC is created for a cluster: its own VPC and subnets are needed.
    assert failed_rules(
        template, {**eks, "VpcId": "", "PrivateSubnetId": "", "SecondPrivateSubnetId": ""}
    ) == {"EksNeedsManagementCluster"}
    # PostgreSQL on the instance's data volume needs the instance.
    assert failed_rules(template, {**eks, "DatabaseMode": "local"}) == {"EksNeedsRds"}
    rule = template["Rules"]["EksNeedsRds"]["Assertions"][0]["AssertDescription"]
    assert "DatabaseMode=rds" in rule and "no instance" in rule
    # RDS in the cluster's VPC still needs two subnets in two zones.
    assert failed_rules(template, {**eks, "SecondPrivateSubnetId": ""}) == {
        "RdsInExistingVpcNeedsTwoSubnets"
    }
    # Only the defaults are valid without parameters: Target=eks alone fails both Rules.
    assert failed_rules(template, {"Target": "eks"}) == {"EksNeedsManagementCluster", "EksNeedsRds"}


# ---------------------------------------------------------------------------- the simulated world


@dataclass
class Deployed:
    stack_name: str
    outputs: dict[str, str]
    resources: dict[str, str]  # logical id -> physical id, for resources moto created
    skipped: set[str]  # declared logical ids moto did not create (unsupported or condition false)


class Aws:
    def __init__(self, endpoint: str) -> None:
        self.endpoint = endpoint
        default = boto3.session.Session(
            aws_access_key_id="testing", aws_secret_access_key="testing", region_name=REGION
        )
        # moto attributes calls made with assumed-role credentials to the role's account.
        credentials = default.client("sts", endpoint_url=endpoint).assume_role(
            RoleArn=f"arn:aws:iam::{ACCOUNT}:role/deploy-tests", RoleSessionName="deploy-tests"
        )["Credentials"]
        self.session = boto3.session.Session(
            aws_access_key_id=credentials["AccessKeyId"],
            aws_secret_access_key=credentials["SecretAccessKey"],
            aws_session_token=credentials["SessionToken"],
            region_name=REGION,
        )
        identity = self.client("sts").get_caller_identity()
        assert identity["Account"] == ACCOUNT

    def client(self, service: str) -> Any:
        return self.session.client(service, endpoint_url=self.endpoint)

    def deploy(self, stack_name: str, parameters: dict[str, str]) -> Deployed:
        cloudformation = self.client("cloudformation")
        cloudformation.create_stack(
            StackName=stack_name,
            TemplateBody=TEMPLATE_PATH.read_text(),
            Parameters=[{"ParameterKey": k, "ParameterValue": v} for k, v in parameters.items()],
            Capabilities=["CAPABILITY_NAMED_IAM"],
        )
        stack = cloudformation.describe_stacks(StackName=stack_name)["Stacks"][0]
        assert stack["StackStatus"] == "CREATE_COMPLETE", stack.get("StackStatusReason")
        outputs = {o["OutputKey"]: o["OutputValue"] for o in stack.get("Outputs", [])}
        summaries = cloudformation.list_stack_resources(StackName=stack_name)[
            "StackResourceSummaries"
        ]
        resources = {
            s["LogicalResourceId"]: s.get("PhysicalResourceId", "")
            for s in summaries
            if s.get("LogicalResourceId")
        }
        # moto lists a resource it skipped, like one whose Condition is false, as an entry with
        # no logical id at all.
        declared = set(load_template()["Resources"])
        skipped = declared - set(resources)
        return Deployed(stack_name, outputs, resources, skipped)


@pytest.fixture(scope="module")
def aws() -> Iterator[Aws]:
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield Aws(f"http://{host}:{port}")
    finally:
        server.stop()


@pytest.fixture(scope="module")
def local_stack(aws: Aws) -> Deployed:
    """Default parameters: a created private VPC and PostgreSQL on the instance."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # moto warns about the types it skips
        return aws.deploy("hyperpilot", {"AllowedPrincipalArn": PRINCIPAL})


@dataclass
class ExistingNetwork:
    vpc_id: str
    subnet_a: str
    subnet_b: str


@pytest.fixture(scope="module")
def existing_network(aws: Aws) -> ExistingNetwork:
    ec2 = aws.client("ec2")
    vpc_id = ec2.create_vpc(CidrBlock="10.90.0.0/16")["Vpc"]["VpcId"]
    subnet_a = ec2.create_subnet(
        VpcId=vpc_id, CidrBlock="10.90.0.0/20", AvailabilityZone=f"{REGION}a"
    )
    subnet_b = ec2.create_subnet(
        VpcId=vpc_id, CidrBlock="10.90.16.0/20", AvailabilityZone=f"{REGION}b"
    )
    return ExistingNetwork(vpc_id, subnet_a["Subnet"]["SubnetId"], subnet_b["Subnet"]["SubnetId"])


@pytest.fixture(scope="module")
def rds_stack(aws: Aws, existing_network: ExistingNetwork) -> Deployed:
    """An existing VPC, PostgreSQL on RDS, another environment name in the same account."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return aws.deploy(
            "hyperpilot-rds",
            {
                "AllowedPrincipalArn": PRINCIPAL,
                "EnvironmentName": "hp-rds",
                "DatabaseMode": "rds",
                "VpcId": existing_network.vpc_id,
                "PrivateSubnetId": existing_network.subnet_a,
                "SecondPrivateSubnetId": existing_network.subnet_b,
                "ImageRegistry": "ghcr.io/acme/hyperpilot",
                "ImageTag": "0.2.0",
                "InstanceType": "m7i.large",
            },
        )


def user_data(aws: Aws, instance_id: str) -> str:
    attribute = aws.client("ec2").describe_instance_attribute(
        InstanceId=instance_id, Attribute="userData"
    )
    return base64.b64decode(attribute["UserData"]["Value"]).decode()


def stack_env(script: str) -> dict[str, str]:
    block = script.split("<<'STACKENV'\n", 1)[1].split("\nSTACKENV\n", 1)[0]
    return dict(line.split("=", 1) for line in block.splitlines())


def policy_documents(aws: Aws, role_name: str) -> dict[str, dict[str, Any]]:
    iam = aws.client("iam")
    documents: dict[str, dict[str, Any]] = {}
    for attached in iam.list_attached_role_policies(RoleName=role_name)["AttachedPolicies"]:
        arn = attached["PolicyArn"]
        if ":iam::aws:" in arn:
            continue
        version = iam.get_policy(PolicyArn=arn)["Policy"]["DefaultVersionId"]
        document = iam.get_policy_version(PolicyArn=arn, VersionId=version)["PolicyVersion"][
            "Document"
        ]
        documents[attached["PolicyName"]] = document
    return documents


def inline_policy(aws: Aws, role_name: str, policy_name: str) -> dict[str, Any]:
    document = aws.client("iam").get_role_policy(RoleName=role_name, PolicyName=policy_name)[
        "PolicyDocument"
    ]
    if isinstance(document, str):
        # moto answers the repr of the dict it stored (real IAM answers a JSON object).
        parsed = ast.literal_eval(document) if document.startswith("{'") else json.loads(document)
        assert isinstance(parsed, dict)
        return parsed
    assert isinstance(document, dict)
    return document


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def test_moto_skips_only_the_known_types(local_stack: Deployed, template: dict[str, Any]) -> None:
    from moto.cloudformation.parsing import get_model_map

    declared = {r["Type"] for r in template["Resources"].values()}
    assert declared - set(get_model_map()) == EXPECTED_SKIPPED_TYPES
    # In the default stack those present (secret, bucket policy) are listed without a resource.
    assert {"AdminTokenSecret", "McpHttpTokenSecret", "SharedBucketPolicy"} <= local_stack.skipped


# (resource, property path) -> value, for properties moto's CloudFormation drops on the floor.
MOTO_IGNORED_PROPERTIES: dict[tuple[str, str], Any] = {
    ("Instance", "SecurityGroupIds"): [{"Fn::GetAtt": ["InstanceSecurityGroup", "GroupId"]}],
    ("InstanceSecurityGroup", "SecurityGroupEgress"): [
        {
            "IpProtocol": "tcp",
            "FromPort": 443,
            "ToPort": 443,
            "CidrIp": "0.0.0.0/0",
            "Description": "AWS APIs, SSM, EKS API servers, image registries",
        }
    ],
    ("Instance", "MetadataOptions.HttpTokens"): "required",
    ("Instance", "MetadataOptions.HttpPutResponseHopLimit"): 2,
    ("DataVolume", "Encrypted"): True,
    ("DataVolume", "VolumeType"): "gp3",
    ("SharedBucket", "PublicAccessBlockConfiguration"): {
        "BlockPublicAcls": True,
        "BlockPublicPolicy": True,
        "IgnorePublicAcls": True,
        "RestrictPublicBuckets": True,
    },
    ("SharedBucket", "VersioningConfiguration.Status"): "Enabled",
    ("SharedBucket", "OwnershipControls.Rules"): [{"ObjectOwnership": "BucketOwnerEnforced"}],
    ("ControlPlaneRole", "ManagedPolicyArns"): {
        "Fn::If": [
            "UseInstance",
            [{"Fn::Sub": "arn:${AWS::Partition}:iam::aws:policy/AmazonSSMManagedInstanceCore"}],
            {"Ref": "AWS::NoValue"},
        ]
    },
    ("Database", "VPCSecurityGroups"): [{"Fn::GetAtt": ["DatabaseSecurityGroup", "GroupId"]}],
    ("Database", "DeletionProtection"): True,
    ("Database", "StorageEncrypted"): True,
}


def test_properties_moto_ignores_are_declared(template: dict[str, Any]) -> None:
    for (name, path), expected in MOTO_IGNORED_PROPERTIES.items():
        value: Any = template["Resources"][name]["Properties"]
        for key in path.split("."):
            value = value[key]
        assert value == expected, (name, path)
    lifecycle = template["Resources"]["SharedBucket"]["Properties"]["LifecycleConfiguration"]
    assert {r["Id"] for r in lifecycle["Rules"]} == {
        "expire-noncurrent-versions",
        "abort-incomplete-multipart-uploads",
    }
    volume_tags = template["Resources"]["DataVolume"]["Properties"]["Tags"]
    assert {"Key": "hyperpilot:data-volume", "Value": {"Ref": "EnvironmentName"}} in volume_tags
    instance = template["Resources"]["Instance"]
    assert instance["CreationPolicy"]["ResourceSignal"]["Count"] == 1
    assert "cfn-signal" in json.dumps(instance["Properties"]["UserData"])


def test_skipped_resources_as_declared(template: dict[str, Any]) -> None:
    resources = template["Resources"]
    secret = resources["AdminTokenSecret"]["Properties"]
    assert secret["Name"] == {"Fn::Sub": "${EnvironmentName}/admin-token"}
    assert secret["GenerateSecretString"]["PasswordLength"] >= 32
    statement = resources["SharedBucketPolicy"]["Properties"]["PolicyDocument"]["Statement"][0]
    assert statement["Effect"] == "Deny"
    assert statement["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
    egress = resources["InstanceEgressToDatabase"]
    assert egress["Condition"] == "RdsFromInstance"
    assert egress["Properties"]["FromPort"] == egress["Properties"]["ToPort"] == 5432
    ingress = resources["DatabaseIngressFromInstance"]["Properties"]
    assert ingress["SourceSecurityGroupId"] == {"Fn::GetAtt": ["InstanceSecurityGroup", "GroupId"]}


def test_outputs_include_the_port_forward_command(local_stack: Deployed) -> None:
    instance_id = local_stack.resources["Instance"]
    assert re.fullmatch(r"i-[0-9a-f]+", instance_id)
    assert local_stack.outputs["InstanceId"] == instance_id
    assert local_stack.outputs["PortForwardCommand"] == (
        f"aws ssm start-session --region {REGION} --target {instance_id} "
        "--document-name AWS-StartPortForwardingSession "
        """--parameters '{"portNumber":["3099"],"localPortNumber":["3099"]}'"""
    )
    assert local_stack.outputs["UiUrl"] == "http://localhost:3099"
    assert local_stack.outputs["SharedBucketName"] == f"hyperpilot-shared-{ACCOUNT}-{REGION}"
    assert local_stack.outputs["AdminTokenSecretName"] == "hyperpilot/admin-token"
    assert "DatabaseEndpoint" not in local_stack.outputs


def test_instance_is_private_and_unreachable_from_outside(aws: Aws, local_stack: Deployed) -> None:
    ec2 = aws.client("ec2")
    instance = ec2.describe_instances(InstanceIds=[local_stack.resources["Instance"]])[
        "Reservations"
    ][0]["Instances"][0]
    assert "PublicIpAddress" not in instance
    assert instance["SubnetId"] == local_stack.resources["PrivateSubnetA"]
    assert instance["InstanceType"] == "t3.large"
    ami = aws.client("ssm").get_parameter(
        Name="/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-x86_64"
    )
    assert instance["ImageId"] == ami["Parameter"]["Value"]
    assert instance["IamInstanceProfile"]["Arn"].endswith(
        f":instance-profile/hyperpilot-control-plane-{REGION}"
    )
    # moto does not attach SecurityGroupIds to the instance (see MOTO_IGNORED_PROPERTIES); the
    # group itself is checked here.
    group = ec2.describe_security_groups(GroupIds=[local_stack.resources["InstanceSecurityGroup"]])[
        "SecurityGroups"
    ][0]
    assert group["IpPermissions"] == []
    # moto keeps its default allow-all egress instead of the template's HTTPS-only rule (see
    # MOTO_IGNORED_PROPERTIES).

    subnet = ec2.describe_subnets(SubnetIds=[instance["SubnetId"]])["Subnets"][0]
    assert subnet["MapPublicIpOnLaunch"] is False
    # moto does not report CloudFormation's subnet associations in describe_route_tables, so the
    # private route table is taken from the stack and its association from the stack resource.
    private_table = local_stack.resources["PrivateRouteTable"]
    assert local_stack.resources["PrivateSubnetARouteTableAssociation"] == private_table
    table = ec2.describe_route_tables(RouteTableIds=[private_table])["RouteTables"][0]
    default_routes = [r for r in table["Routes"] if r.get("DestinationCidrBlock") == "0.0.0.0/0"]
    assert [r.get("NatGatewayId") for r in default_routes] == [local_stack.resources["NatGateway"]]
    assert not any(r.get("GatewayId", "").startswith("igw-") for r in default_routes)
    assert any(
        r.get("GatewayId") == local_stack.resources["S3GatewayEndpoint"] for r in table["Routes"]
    )
    nat = ec2.describe_nat_gateways(NatGatewayIds=[local_stack.resources["NatGateway"]])[
        "NatGateways"
    ][0]
    assert nat["SubnetId"] == local_stack.resources["PublicSubnet"]


def test_data_volume_follows_the_instance(aws: Aws, local_stack: Deployed) -> None:
    ec2 = aws.client("ec2")
    volume = ec2.describe_volumes(VolumeIds=[local_stack.resources["DataVolume"]])["Volumes"][0]
    instance = ec2.describe_instances(InstanceIds=[local_stack.resources["Instance"]])[
        "Reservations"
    ][0]["Instances"][0]
    assert volume["Size"] == 50
    assert volume["AvailabilityZone"] == instance["Placement"]["AvailabilityZone"]
    # The instance attaches it at boot, found by its hyperpilot:data-volume tag (moto drops
    # volume tags: checked in the template), so a replacement instance can take it over.
    assert volume["Attachments"] == []
    instance_tags = {t["Key"]: t["Value"] for t in instance["Tags"]}
    assert instance_tags["hyperpilot:environment"] == "hyperpilot"


def test_user_data_bootstraps_compose(aws: Aws, local_stack: Deployed, tmp_path: Path) -> None:
    script = user_data(aws, local_stack.resources["Instance"])
    assert len(script.encode()) <= 16 * 1024, "EC2 accepts at most 16 KiB of user data"
    syntax = subprocess.run(
        ["bash", "-n"], input=script, capture_output=True, text=True, timeout=30
    )
    assert syntax.returncode == 0, syntax.stderr
    env = stack_env(script)
    assert env["AWS_REGION"] == REGION
    assert env["IMAGE_REGISTRY_PARAMETER"] == "/hyperpilot/hyperpilot/image-registry"
    assert env["IMAGE_TAG_PARAMETER"] == "/hyperpilot/hyperpilot/image-tag"
    assert env["DATABASE_MODE"] == "local"
    assert env["DATABASE_HOST"] == "postgres"
    assert env["ADMIN_TOKEN_SECRET_ID"] == "hyperpilot/admin-token"
    assert env["LOG_GROUP"] == "/hyperpilot/hyperpilot"
    assert env["SHARED_BUCKET"] == f"hyperpilot-shared-{ACCOUNT}-{REGION}"
    assert "${" not in "".join(env.values())
    # The prepare script (run before every start) is valid Python.
    prepare = script.split("<<'PREPARE'\n", 1)[1].split("\nPREPARE\n", 1)[0]
    compile(prepare, "prepare", "exec")
    assert "cat > /opt/hyperpilot/docker-compose.yml" in script
    assert "systemctl enable hyperpilot.service" in script
    assert "sha256sum -c" in script
    assert "Name=tag:hyperpilot:data-volume,Values=${ENVIRONMENT_NAME}" in script
    assert env["ENVIRONMENT_NAME"] == "hyperpilot"
    # The instance waits for the created VPC's route out (a reference, hence a dependency).
    assert env["EGRESS_ROUTE"].startswith(local_stack.resources["PrivateRouteTable"])


def test_image_parameters(aws: Aws, local_stack: Deployed, rds_stack: Deployed) -> None:
    ssm = aws.client("ssm")

    def value(name: str) -> str:
        return str(ssm.get_parameter(Name=name)["Parameter"]["Value"])

    assert value("/hyperpilot/hyperpilot/image-registry") == (
        f"{ACCOUNT}.dkr.ecr.{REGION}.amazonaws.com/hyperpilot"
    )
    assert value("/hyperpilot/hyperpilot/image-tag") == "0.1.0"
    assert value("/hyperpilot/hp-rds/image-registry") == "ghcr.io/acme/hyperpilot"
    assert value("/hyperpilot/hp-rds/image-tag") == "0.2.0"


def test_shared_bucket(aws: Aws, local_stack: Deployed) -> None:
    s3 = aws.client("s3")
    bucket = local_stack.resources["SharedBucket"]
    assert bucket == f"hyperpilot-shared-{ACCOUNT}-{REGION}"
    rules = s3.get_bucket_encryption(Bucket=bucket)["ServerSideEncryptionConfiguration"]["Rules"]
    assert rules[0]["ApplyServerSideEncryptionByDefault"]["SSEAlgorithm"] == "AES256"
    tags = {t["Key"]: t["Value"] for t in s3.get_bucket_tagging(Bucket=bucket)["TagSet"]}
    assert tags["hyperpilot:environment"] == "hyperpilot"
    # Public access block, versioning, lifecycle and ownership: moto's CloudFormation does not
    # apply them (test_properties_moto_ignores_are_declared checks the template).


def test_log_group(aws: Aws, local_stack: Deployed) -> None:
    groups = aws.client("logs").describe_log_groups(logGroupNamePrefix="/hyperpilot/hyperpilot")[
        "logGroups"
    ]
    assert [(g["logGroupName"], g.get("retentionInDays")) for g in groups] == [
        ("/hyperpilot/hyperpilot", 30)
    ]


def test_control_plane_role(aws: Aws, local_stack: Deployed) -> None:
    iam = aws.client("iam")
    role_name = f"hyperpilot-control-plane-{REGION}"
    role = iam.get_role(RoleName=role_name)["Role"]
    trust = role["AssumeRolePolicyDocument"]["Statement"]
    assert [s["Principal"] for s in trust] == [{"Service": "ec2.amazonaws.com"}]
    attached = {
        p["PolicyArn"]
        for p in iam.list_attached_role_policies(RoleName=role_name)["AttachedPolicies"]
    }
    # AmazonSSMManagedInstanceCore comes from the role's ManagedPolicyArns, which moto ignores
    # (test_properties_moto_ignores_are_declared checks it in the template).
    for area in ("clusters", "network", "identity", "storage", "runtime"):
        assert f"arn:aws:iam::{ACCOUNT}:policy/hyperpilot-control-plane-{area}-{REGION}" in attached
    profile = iam.get_instance_profile(InstanceProfileName=role_name)["InstanceProfile"]
    assert [r["RoleName"] for r in profile["Roles"]] == [role_name]


READ_PREFIXES = ("Describe", "List", "Get", "Search")
UNCONDITIONED_STAR_ALLOWED = {"ecr:GetAuthorizationToken"}


def test_control_plane_policies_are_least_privilege(aws: Aws, local_stack: Deployed) -> None:
    documents = policy_documents(aws, f"hyperpilot-control-plane-{REGION}")
    assert len(documents) == 5
    statements = [s for d in documents.values() for s in d["Statement"]]
    for statement in statements:
        assert statement["Effect"] == "Allow"
        actions = as_list(statement["Action"])
        for action in actions:
            service, _, verb = action.partition(":")
            assert "*" not in verb, f"wildcard action {action}"
            assert service != "*"
        if as_list(statement["Resource"]) == ["*"] and "Condition" not in statement:
            for action in actions:
                verb = action.split(":", 1)[1]
                assert verb.startswith(READ_PREFIXES) or action in UNCONDITIONED_STAR_ALLOWED, (
                    f"{statement['Sid']}: {action} on every resource without a condition"
                )
    by_sid = {s["Sid"]: s for s in statements}
    pass_role = by_sid["PassHyperpilotRolesToClusterServices"]
    assert pass_role["Action"] == "iam:PassRole"
    assert pass_role["Resource"] == f"arn:aws:iam::{ACCOUNT}:role/hyperpilot-*"
    assert set(pass_role["Condition"]["StringEquals"]["iam:PassedToService"]) == {
        "eks.amazonaws.com",
        "sagemaker.amazonaws.com",
        "ec2.amazonaws.com",
        "pods.eks.amazonaws.com",
    }
    # Every IAM write is confined to hyperpilot-* names or EKS OIDC providers.
    for statement in statements:
        writes = [
            a
            for a in as_list(statement["Action"])
            if a.startswith("iam:") and not a.split(":")[1].startswith(READ_PREFIXES)
        ]
        if not writes or writes == ["iam:CreateServiceLinkedRole"]:
            continue
        for resource in as_list(statement["Resource"]):
            assert re.search(
                r":(role|policy|instance-profile)/hyperpilot-\*$|:oidc-provider/oidc\.eks\.|aws-service-role/s3\.data-source\.lustre",
                resource,
            ), (
                statement["Sid"],
                resource,
            )
    shared = by_sid["SharedBucketObjects"]["Resource"]
    assert shared == [
        f"arn:aws:s3:::hyperpilot-shared-{ACCOUNT}-{REGION}",
        f"arn:aws:s3:::hyperpilot-shared-{ACCOUNT}-{REGION}/*",
    ]
    assert by_sid["Ec2CreateTagged"]["Condition"] == {
        "StringEquals": {"aws:RequestTag/managed-by": "hyperpilot"}
    }
    assert by_sid["Ec2ChangeManaged"]["Condition"] == {
        "StringEquals": {"aws:ResourceTag/managed-by": "hyperpilot"}
    }
    assert by_sid["AttachOwnDataVolume"]["Condition"] == {
        "StringEquals": {"aws:ResourceTag/hyperpilot:data-volume": "hyperpilot"}
    }
    assert by_sid["AttachToOwnInstance"]["Condition"] == {
        "StringEquals": {"aws:ResourceTag/hyperpilot:environment": "hyperpilot"}
    }
    assert (
        by_sid["OwnSecrets"]["Resource"]
        == f"arn:aws:secretsmanager:{REGION}:{ACCOUNT}:secret:hyperpilot/*"
    )
    services = {a.split(":")[0] for s in statements for a in as_list(s["Action"])}
    assert services == {
        "eks",
        "sagemaker",
        "ec2",
        "iam",
        "s3",
        "fsx",
        "secretsmanager",
        "logs",
        "ecr",
        "servicequotas",
        "ssm",
        "pricing",  # list prices (pricing:GetProducts)
        "sqs",  # the event queue of stage waits, by name
        "events",  # its EventBridge rule, by name
    }
    assert (
        by_sid["EventQueue"]["Resource"]
        == f"arn:aws:sqs:{REGION}:{ACCOUNT}:hyperpilot-aws-events-*"
    )
    assert by_sid["EventRule"]["Resource"] == (
        f"arn:aws:events:{REGION}:{ACCOUNT}:rule/hyperpilot-aws-events"
    )


def test_operator_role_only_port_forwards(aws: Aws, local_stack: Deployed) -> None:
    iam = aws.client("iam")
    role_name = f"hyperpilot-operator-{REGION}"
    role = iam.get_role(RoleName=role_name)["Role"]
    assert [s["Principal"] for s in role["AssumeRolePolicyDocument"]["Statement"]] == [
        {"AWS": PRINCIPAL}
    ]
    assert local_stack.outputs["OperatorRoleArn"] == role["Arn"]
    document = inline_policy(aws, role_name, "port-forward-to-ui")
    by_sid = {s["Sid"]: s for s in document["Statement"]}
    start = by_sid["StartPortForwardOnly"]
    assert start["Action"] == "ssm:StartSession"
    assert start["Resource"] == [
        f"arn:aws:ec2:{REGION}:{ACCOUNT}:instance/{local_stack.resources['Instance']}",
        f"arn:aws:ssm:{REGION}::document/AWS-StartPortForwardingSession",
    ]
    assert (
        by_sid["OwnSessions"]["Resource"]
        == f"arn:aws:ssm:{REGION}:{ACCOUNT}:session/${{aws:userid}}-*"
    )
    assert by_sid["ReadAdminToken"]["Resource"].endswith(":secret:hyperpilot/admin-token-*")
    # The MCP server's bearer token, to hand to the MCP client; nothing else of Secrets Manager.
    assert by_sid["ReadMcpHttpToken"]["Action"] == "secretsmanager:GetSecretValue"
    assert by_sid["ReadMcpHttpToken"]["Resource"] == (
        f"arn:aws:secretsmanager:{REGION}:{ACCOUNT}:secret:hyperpilot/mcp-http-token-*"
    )


def test_rds_stack_in_an_existing_vpc(
    aws: Aws, rds_stack: Deployed, existing_network: ExistingNetwork
) -> None:
    assert "Vpc" not in rds_stack.resources and "NatGateway" not in rds_stack.resources
    assert rds_stack.outputs["VpcId"] == existing_network.vpc_id
    ec2 = aws.client("ec2")
    instance = ec2.describe_instances(InstanceIds=[rds_stack.resources["Instance"]])[
        "Reservations"
    ][0]["Instances"][0]
    assert instance["SubnetId"] == existing_network.subnet_a
    assert instance["InstanceType"] == "m7i.large"

    database = aws.client("rds").describe_db_instances(
        DBInstanceIdentifier=rds_stack.resources["Database"]
    )["DBInstances"][0]
    assert database["Engine"] == "postgres"
    assert database["EngineVersion"] == "16.13"
    assert database["StorageEncrypted"] is True
    assert database["PubliclyAccessible"] is False
    assert database["BackupRetentionPeriod"] == 7
    assert {s["SubnetIdentifier"] for s in database["DBSubnetGroup"]["Subnets"]} == {
        existing_network.subnet_a,
        existing_network.subnet_b,
    }
    database_group = rds_stack.resources["DatabaseSecurityGroup"]
    # The instance's VPCSecurityGroups and DeletionProtection are not applied by moto
    # (test_properties_moto_ignores_are_declared); the group's own rules are checked here.
    assert rds_stack.outputs["DatabaseEndpoint"] == database["Endpoint"]["Address"]

    group = ec2.describe_security_groups(GroupIds=[database_group])["SecurityGroups"][0]
    assert [
        (
            p["IpProtocol"],
            p["FromPort"],
            [g["GroupId"] for g in p["UserIdGroupPairs"]],
            p.get("IpRanges"),
        )
        for p in group["IpPermissions"]
    ] == [("tcp", 5432, [rds_stack.resources["InstanceSecurityGroup"]], [])]

    env = stack_env(user_data(aws, rds_stack.resources["Instance"]))
    assert env["DATABASE_MODE"] == "rds"
    assert env["DATABASE_HOST"] == database["Endpoint"]["Address"]
    assert env["DATABASE_SECRET_ID"] == "hp-rds/database"
    assert env["IMAGE_TAG_PARAMETER"] == "/hyperpilot/hp-rds/image-tag"
    assert env["EGRESS_ROUTE"] == "existing-network"


def test_two_environments_do_not_collide(
    aws: Aws, local_stack: Deployed, rds_stack: Deployed
) -> None:
    iam = aws.client("iam")
    roles = {r["RoleName"] for r in iam.list_roles()["Roles"]}
    assert {f"hyperpilot-control-plane-{REGION}", f"hp-rds-control-plane-{REGION}"} <= roles
    buckets = {b["Name"] for b in aws.client("s3").list_buckets()["Buckets"]}
    assert {
        local_stack.outputs["SharedBucketName"],
        rds_stack.outputs["SharedBucketName"],
    } <= buckets
    assert local_stack.outputs["SharedBucketName"] != rds_stack.outputs["SharedBucketName"]


def test_stacks_stay_out_of_the_default_account(aws: Aws, local_stack: Deployed) -> None:
    default_iam = boto3.client(
        "iam",
        endpoint_url=aws.endpoint,
        region_name=REGION,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    names = {r["RoleName"] for r in default_iam.list_roles()["Roles"]}
    assert f"hyperpilot-control-plane-{REGION}" not in names


# ---------------------------------------------------------------------------- the MCP HTTP token

MCP_TOKEN_FILE = "/opt/hyperpilot/secrets/mcp-http-token"


def test_the_mcp_http_token_is_a_generated_secret(template: dict[str, Any]) -> None:
    resource = template["Resources"]["McpHttpTokenSecret"]
    assert resource["Type"] == "AWS::SecretsManager::Secret"
    properties = resource["Properties"]
    assert properties["Name"] == {"Fn::Sub": "${EnvironmentName}/mcp-http-token"}
    # Generated by Secrets Manager: the template carries no value.
    assert "SecretString" not in properties
    assert properties["GenerateSecretString"]["PasswordLength"] >= 32
    assert properties["GenerateSecretString"]["ExcludePunctuation"] is True


def test_the_instance_hands_the_mcp_http_token_over_as_a_file(
    aws: Aws, local_stack: Deployed
) -> None:
    script = user_data(aws, local_stack.resources["Instance"])
    assert len(script.encode()) <= 16 * 1024
    env = stack_env(script)
    assert env["MCP_HTTP_TOKEN_SECRET_ID"] == "hyperpilot/mcp-http-token"
    prepare = script.split("<<'PREPARE'\n", 1)[1].split("\nPREPARE\n", 1)[0]
    # Required (no required=False): without it the MCP server could not start.
    assert 'secret(stack["MCP_HTTP_TOKEN_SECRET_ID"])' in prepare
    assert MCP_TOKEN_FILE.rsplit("/", 1)[0] in prepare
    # Never into .env, so never into a container's environment.
    assert "MCP_HTTP_TOKEN" not in prepare.split("env = {", 1)[1].split("}", 1)[0]
    compose = script.split("<<'COMPOSEFILE'\n", 1)[1]
    assert f"file: {MCP_TOKEN_FILE}" in compose
    assert local_stack.outputs["McpHttpTokenSecretName"] == "hyperpilot/mcp-http-token"
    assert local_stack.outputs["GetMcpHttpTokenCommand"] == (
        f"aws secretsmanager get-secret-value --region {REGION} --secret-id "
        "hyperpilot/mcp-http-token --query SecretString --output text"
    )


FAKE_AWS = """#!/bin/sh
case "$*" in
  *secretsmanager*admin-token*) echo admin-token-value ;;
  *secretsmanager*mcp-http-token*) echo mcp-http-token-value ;;
  *secretsmanager*) echo "ResourceNotFoundException" >&2; exit 254 ;;
  *ssm*image-registry*) echo registry.local:5000/hyperpilot ;;
  *ssm*image-tag*) echo 0.1.0 ;;
  *) echo "unexpected: $*" >&2; exit 1 ;;
esac
"""


def test_prepare_writes_the_mcp_http_token_for_the_container_only(
    aws: Aws, local_stack: Deployed, tmp_path: Path
) -> None:
    """The instance's prepare script, run here with a stand-in `aws` and its paths moved
    under tmp_path: the token file holds the secret, owned by the containers' uid, mode 0400, in
    a directory only root enters, and stays out of .env."""
    import os

    if os.geteuid() != 0:
        pytest.skip("prepare chowns the token file to uid 10001: needs root, as on the instance")
    script = user_data(aws, local_stack.resources["Instance"])
    opt, var = tmp_path / "opt", tmp_path / "var"
    opt.mkdir()
    block = script.split("<<'STACKENV'\n", 1)[1].split("\nSTACKENV\n", 1)[0]
    (opt / "stack.env").write_text(block + "\n")
    prepare = script.split("<<'PREPARE'\n", 1)[1].split("\nPREPARE\n", 1)[0]
    prepare = prepare.replace("/opt/hyperpilot", str(opt)).replace("/var/lib/hyperpilot", str(var))
    (tmp_path / "prepare").write_text(prepare)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "aws").write_text(FAKE_AWS)
    (bin_dir / "aws").chmod(0o755)
    result = subprocess.run(
        [sys.executable, str(tmp_path / "prepare")],
        env={"PATH": f"{bin_dir}:{os.environ['PATH']}"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    token = opt / "secrets" / "mcp-http-token"
    assert token.read_text() == "mcp-http-token-value"
    stat = token.stat()
    assert (stat.st_uid, stat.st_gid, stat.st_mode & 0o777) == (10001, 10001, 0o400)
    assert (token.parent.stat().st_mode & 0o777) == 0o700
    dotenv = (opt / ".env").read_text()
    assert "mcp-http-token-value" not in dotenv and "MCP_HTTP_TOKEN" not in dotenv
    assert "HYPERPILOT_ADMIN_TOKEN='admin-token-value'" in dotenv


# ---------------------------------------------------------------------------- Target=eks

CLUSTER = "hp-management"
SERVICE_ACCOUNTS = TEMPLATE_PATH.parents[1] / "kubernetes" / "base" / "serviceaccounts.yaml"
KUBECTL = str(Path(sys.executable).parent / "kubectl")
INSTANCE_ONLY = {
    "Instance",
    "InstanceSecurityGroup",
    "ControlPlaneInstanceProfile",
    "DataVolume",
    "DatabaseIngressFromInstance",
    "InstanceEgressToDatabase",
}


@pytest.fixture(scope="module")
def cluster_security_group(aws: Aws, existing_network: ExistingNetwork) -> str:
    group = aws.client("ec2").create_security_group(
        GroupName="eks-cluster-sg-hp-management",
        Description="EKS created security group applied to ENI that is attached to EKS Control Plane master nodes, as well as any managed workloads.",
        VpcId=existing_network.vpc_id,
    )
    return str(group["GroupId"])


@pytest.fixture(scope="module")
def eks_stack(aws: Aws, existing_network: ExistingNetwork, cluster_security_group: str) -> Deployed:
    """Target=eks: the control plane on an existing EKS cluster, RDS in the cluster's VPC."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return aws.deploy(
            "hyperpilot-eks",
            {
                "AllowedPrincipalArn": PRINCIPAL,
                "EnvironmentName": "hp-eks",
                "Target": "eks",
                "ManagementClusterName": CLUSTER,
                "ClusterSecurityGroupId": cluster_security_group,
                "InstallPodIdentityAgent": "true",
                "DatabaseMode": "rds",
                "VpcId": existing_network.vpc_id,
                "PrivateSubnetId": existing_network.subnet_a,
                "SecondPrivateSubnetId": existing_network.subnet_b,
                "ImageTag": "0.3.0",
            },
        )


def test_moto_skips_the_eks_types(eks_stack: Deployed) -> None:
    # Declared with their condition true, created by nothing in moto (checked in the template by
    # test_eks_resources_as_declared).
    assert {
        "ControlPlanePodIdentity",
        "OperatorAccessEntry",
        "PodIdentityAgentAddon",
    } <= eks_stack.skipped
    assert not {"ControlPlanePodIdentity", "OperatorAccessEntry"} & set(eks_stack.resources)


def test_eks_target_creates_no_instance(aws: Aws, eks_stack: Deployed) -> None:
    assert eks_stack.skipped >= INSTANCE_ONLY
    assert not INSTANCE_ONLY & set(eks_stack.resources)
    assert "Vpc" not in eks_stack.resources and "NatGateway" not in eks_stack.resources
    ec2 = aws.client("ec2")
    reservations = ec2.describe_instances(
        Filters=[{"Name": "tag:hyperpilot:environment", "Values": ["hp-eks"]}]
    )["Reservations"]
    assert reservations == []
    volumes = ec2.describe_volumes(
        Filters=[{"Name": "tag:hyperpilot:data-volume", "Values": ["hp-eks"]}]
    )["Volumes"]
    assert volumes == []
    iam = aws.client("iam")
    with pytest.raises(iam.exceptions.NoSuchEntityException):
        iam.get_instance_profile(InstanceProfileName=f"hp-eks-control-plane-{REGION}")
    for output in ("InstanceId", "DataVolumeId"):
        assert output not in eks_stack.outputs


def test_eks_control_plane_role_is_trusted_by_pod_identity(aws: Aws, eks_stack: Deployed) -> None:
    iam = aws.client("iam")
    role_name = f"hp-eks-control-plane-{REGION}"
    role = iam.get_role(RoleName=role_name)["Role"]
    (statement,) = role["AssumeRolePolicyDocument"]["Statement"]
    assert statement["Principal"] == {"Service": "pods.eks.amazonaws.com"}
    assert statement["Effect"] == "Allow"
    assert sorted(as_list(statement["Action"])) == ["sts:AssumeRole", "sts:TagSession"]
    assert eks_stack.outputs["ControlPlaneRoleArn"] == role["Arn"]
    # The same five policies as on the instance (its volume-attach statements name tags that no
    # resource carries here).
    documents = policy_documents(aws, role_name)
    instance = policy_documents(aws, f"hyperpilot-control-plane-{REGION}")
    assert len(documents) == 5
    assert {
        name.replace("hp-eks-", "hyperpilot-"): [s["Sid"] for s in d["Statement"]]
        for name, d in documents.items()
    } == {name: [s["Sid"] for s in d["Statement"]] for name, d in instance.items()}
    # No instance profile, so no Session Manager core policy either.
    attached = iam.list_attached_role_policies(RoleName=role_name)["AttachedPolicies"]
    assert not any(p["PolicyArn"].startswith("arn:aws:iam::aws:") for p in attached)


def test_eks_operator_role_reaches_the_cluster_not_an_instance(
    aws: Aws, eks_stack: Deployed
) -> None:
    role_name = f"hp-eks-operator-{REGION}"
    assert aws.client("iam").list_role_policies(RoleName=role_name)["PolicyNames"] == [
        "deploy-to-cluster"
    ]
    document = inline_policy(aws, role_name, "deploy-to-cluster")
    by_sid = {s["Sid"]: s for s in document["Statement"]}
    assert set(by_sid) == {
        "ReadAdminToken",
        "ReadMcpHttpToken",
        "ReadClusterSecrets",
        "DescribeManagementCluster",
        "SharedBucketData",
    }
    assert not any(a.startswith("ssm:") for s in by_sid.values() for a in as_list(s["Action"]))
    assert by_sid["DescribeManagementCluster"] == {
        "Sid": "DescribeManagementCluster",
        "Effect": "Allow",
        "Action": "eks:DescribeCluster",
        "Resource": f"arn:aws:eks:{REGION}:{ACCOUNT}:cluster/{CLUSTER}",
    }
    assert by_sid["ReadClusterSecrets"]["Resource"] == [
        f"arn:aws:secretsmanager:{REGION}:{ACCOUNT}:secret:hp-eks/database-*",
        f"arn:aws:secretsmanager:{REGION}:{ACCOUNT}:secret:hp-eks/mcp-gateway-token-*",
    ]
    # The instance stack's operator keeps its port forward and nothing of the cluster's.
    instance = inline_policy(aws, f"hyperpilot-operator-{REGION}", "port-forward-to-ui")
    assert {s["Sid"] for s in instance["Statement"]} == {
        "StartPortForwardOnly",
        "OwnSessions",
        "SessionStatus",
        "ReadAdminToken",
        "ReadMcpHttpToken",
        "SharedBucketData",
    }


def test_eks_database_accepts_the_cluster_security_group_only(
    aws: Aws,
    eks_stack: Deployed,
    existing_network: ExistingNetwork,
    cluster_security_group: str,
) -> None:
    database = aws.client("rds").describe_db_instances(
        DBInstanceIdentifier=eks_stack.resources["Database"]
    )["DBInstances"][0]
    assert {s["SubnetIdentifier"] for s in database["DBSubnetGroup"]["Subnets"]} == {
        existing_network.subnet_a,
        existing_network.subnet_b,
    }
    group = aws.client("ec2").describe_security_groups(
        GroupIds=[eks_stack.resources["DatabaseSecurityGroup"]]
    )["SecurityGroups"][0]
    assert group["VpcId"] == existing_network.vpc_id
    assert [
        (p["IpProtocol"], p["FromPort"], [g["GroupId"] for g in p["UserIdGroupPairs"]])
        for p in group["IpPermissions"]
    ] == [("tcp", 5432, [cluster_security_group])]
    assert eks_stack.outputs["DatabaseEndpoint"] == database["Endpoint"]["Address"]


def aws_callers_in_the_base() -> set[tuple[str, str]]:
    """(namespace, name) of the base's service accounts that carry an AWS role."""
    import yaml

    accounts = [d for d in yaml.safe_load_all(SERVICE_ACCOUNTS.read_text()) if d]
    return {
        ("hyperpilot", a["metadata"]["name"])
        for a in accounts
        if "eks.amazonaws.com/role-arn" in a["metadata"].get("annotations", {})
    }


def test_eks_resources_as_declared(template: dict[str, Any]) -> None:
    resources = template["Resources"]
    associations = {
        (r["Properties"]["Namespace"], r["Properties"]["ServiceAccount"]): r
        for r in resources.values()
        if r["Type"] == "AWS::EKS::PodIdentityAssociation"
    }
    # One association for each service account of the base that calls AWS.
    assert set(associations) == aws_callers_in_the_base() == {("hyperpilot", "hyperpilot-aws")}
    for association in associations.values():
        assert association["Condition"] == "UseEks"
        assert association["Properties"]["ClusterName"] == {"Ref": "ManagementClusterName"}
        assert association["Properties"]["RoleArn"] == {"Fn::GetAtt": ["ControlPlaneRole", "Arn"]}
    addon = resources["PodIdentityAgentAddon"]
    assert addon["Condition"] == "InstallAgent"
    assert addon["Properties"]["AddonName"] == "eks-pod-identity-agent"
    assert addon["Properties"]["PreserveOnDelete"] is True
    assert template["Parameters"]["InstallPodIdentityAgent"]["Default"] == "false"
    entry = resources["OperatorAccessEntry"]
    assert entry["Condition"] == "UseEks"
    assert entry["Properties"]["PrincipalArn"] == {"Fn::GetAtt": ["OperatorRole", "Arn"]}
    assert entry["Properties"]["Type"] == "STANDARD"
    assert entry["Properties"]["AccessPolicies"] == [
        {
            "PolicyArn": {
                "Fn::Sub": "arn:${AWS::Partition}:eks::aws:cluster-access-policy/AmazonEKSEditPolicy"
            },
            "AccessScope": {"Type": "namespace", "Namespaces": ["hyperpilot", "nats"]},
        }
    ]
    # The trust policy of either target, as declared.
    trust = resources["ControlPlaneRole"]["Properties"]["AssumeRolePolicyDocument"]["Statement"]
    ((condition, eks, instance),) = [s["Fn::If"] for s in trust]
    assert condition == "UseEks"
    assert eks["Principal"] == {"Service": "pods.eks.amazonaws.com"}
    assert eks["Action"] == ["sts:AssumeRole", "sts:TagSession"]
    assert instance["Principal"] == {"Service": "ec2.amazonaws.com"}
    for name in INSTANCE_ONLY:
        assert resources[name]["Condition"] in {"UseInstance", "RdsFromInstance"}, name


def test_eks_outputs_are_the_commands(aws: Aws, eks_stack: Deployed) -> None:
    outputs = eks_stack.outputs
    operator = aws.client("iam").get_role(RoleName=f"hp-eks-operator-{REGION}")["Role"]["Arn"]
    assert outputs["UpdateKubeconfigCommand"] == (
        f"aws eks update-kubeconfig --region {REGION} --name {CLUSTER} "
        f"--role-arn {operator} --alias hp-eks"
    )
    assert outputs["PortForwardCommand"] == (
        "kubectl -n hyperpilot port-forward svc/hyperpilot-gateway 3099"
    )
    assert outputs["McpPortForwardCommand"] == (
        "kubectl -n hyperpilot port-forward svc/hyperpilot-mcp 8765"
    )
    assert outputs["InstallNatsCommand"] == (
        "helm repo add nats https://nats-io.github.io/k8s/helm/charts/ && "
        "helm upgrade --install nats nats/nats --namespace nats --version 1.3.x "
        "-f deploy/kubernetes/nats/values.yaml"
    )
    host = outputs["DatabaseEndpoint"]
    database = outputs["CreateDatabaseSecretCommand"]
    assert "--secret-id hp-eks/database " in database
    assert f"@{host}:5432/hyperpilot?sslmode=require" in database
    tokens = outputs["CreateTokenSecretsCommand"]
    for secret in ("hp-eks/admin-token", "hp-eks/mcp-http-token", "hp-eks/mcp-gateway-token"):
        assert f"--secret-id {secret} " in tokens
    for command in (database, tokens):
        assert "${" not in command
        syntax = subprocess.run(
            ["bash", "-n"], input=command, capture_output=True, text=True, timeout=30
        )
        assert syntax.returncode == 0, syntax.stderr
    assert "PortForwardCommand" in outputs and "InstanceId" not in outputs


FAKE_TOOLS = {
    # The Secrets Manager values the commands read, and jq's one use here.
    "aws": """#!/bin/sh
case "$*" in
  *"--secret-id hp-eks/database "*) echo '{"username": "hyperpilot", "password": "db-pass"}' ;;
  *"--secret-id hp-eks/admin-token "*) echo admin-token-value ;;
  *"--secret-id hp-eks/mcp-http-token "*) echo mcp-http-token-value ;;
  *) echo "ResourceNotFoundException" >&2; exit 254 ;;
esac
""",
    "jq": """#!/bin/sh
[ "$*" = "-r .password" ] || { echo "unexpected jq $*" >&2; exit 2; }
exec python3 -c 'import json, sys; print(json.load(sys.stdin)["password"])'
""",
}


def run_output_command(command: str, cwd: Path, tools: Path) -> subprocess.CompletedProcess[str]:
    import os

    return subprocess.run(
        ["bash", "-euo", "pipefail", "-c", command],
        cwd=cwd,
        env={"PATH": f"{tools}:{os.environ['PATH']}", "HOME": str(cwd)},
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture()
def tools(tmp_path: Path) -> Path:
    """kubectl that renders instead of applying, plus stand-ins for aws and jq."""
    directory = tmp_path / "bin"
    directory.mkdir()
    for name, script in FAKE_TOOLS.items():
        (directory / name).write_text(script)
        (directory / name).chmod(0o755)
    # `kubectl apply -k DIR` renders DIR; `kubectl apply -f -` echoes the manifest (one YAML
    # document per apply); anything else
    # is the real kubectl (create ... --dry-run=client works without a cluster).
    (directory / "kubectl").write_text(
        f"""#!/bin/sh
if [ "$1" = apply ] && [ "$2" = -k ]; then exec {KUBECTL} kustomize "$3"; fi
if [ "$1" = apply ] && [ "$2" = -f ] && [ "$3" = - ]; then echo ---; exec cat; fi
exec {KUBECTL} "$@"
"""
    )
    (directory / "kubectl").chmod(0o755)
    return directory


def test_eks_apply_command_renders_the_overlay(
    eks_stack: Deployed, tmp_path: Path, tools: Path
) -> None:
    """The ApplyCommand output, run from a repository root: it writes the stack's overlay and
    kustomize (the pinned kubectl) renders base + deploy/cloudformation/eks + that overlay."""
    import yaml

    root = tmp_path / "checkout"
    root.mkdir()
    (root / "deploy").symlink_to(TEMPLATE_PATH.parents[1])
    result = run_output_command(eks_stack.outputs["ApplyCommand"], root, tools)
    assert result.returncode == 0, result.stderr
    docs = [d for d in yaml.safe_load_all(result.stdout) if d]
    assert (root / "overlays" / "hp-eks" / "kustomization.yaml").is_file()
    # The cluster administrator made the namespace; the operator's edit rights cannot.
    assert "Namespace" not in {d["kind"] for d in docs}
    assert {d["metadata"].get("namespace") for d in docs} == {"hyperpilot"}
    accounts = {d["metadata"]["name"]: d for d in docs if d["kind"] == "ServiceAccount"}
    # The role comes from the Pod Identity association: no IRSA annotation to win over it.
    assert "annotations" not in accounts["hyperpilot-aws"]["metadata"]
    registry = f"{ACCOUNT}.dkr.ecr.{REGION}.amazonaws.com/hyperpilot"
    images = {
        c["image"]
        for d in docs
        if d["kind"] in {"Deployment", "Job"}
        for c in d["spec"]["template"]["spec"]["containers"]
    }
    assert images == {
        f"{registry}/{service}:0.3.0"
        for service in ("gateway", "cluster-svc", "workload-svc", "inference-svc", "mcp-svc")
    }
    (config,) = [d for d in docs if d["kind"] == "ConfigMap"]
    assert config["data"]["AWS_REGION"] == REGION


def test_eks_secret_commands_make_the_secrets_the_manifests_name(
    eks_stack: Deployed, tmp_path: Path, tools: Path
) -> None:
    import yaml

    made: dict[str, dict[str, str]] = {}
    for output in ("CreateDatabaseSecretCommand", "CreateTokenSecretsCommand"):
        result = run_output_command(eks_stack.outputs[output], tmp_path, tools)
        assert result.returncode == 0, result.stderr
        for doc in yaml.safe_load_all(result.stdout):
            if doc:
                assert doc["kind"] == "Secret" and doc["metadata"]["namespace"] == "hyperpilot"
                made[doc["metadata"]["name"]] = {
                    k: base64.b64decode(v).decode() for k, v in doc.get("data", {}).items()
                }
    host = eks_stack.outputs["DatabaseEndpoint"]
    assert made == {
        "hyperpilot-database": {
            "url": f"postgresql://hyperpilot:db-pass@{host}:5432/hyperpilot?sslmode=require"
        },
        "hyperpilot-admin-token": {"token": "admin-token-value"},
        # The optional <EnvironmentName>/mcp-gateway-token does not exist here: an empty key.
        "hyperpilot-mcp": {"http-token": "mcp-http-token-value", "gateway-token": ""},
    }
