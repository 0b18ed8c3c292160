"""Every port of cluster-svc's workflows, built from one boto3 session and the settings."""

from __future__ import annotations

from cluster_svc.adapters.aws import AwsClients
from cluster_svc.adapters.ec2 import Ec2Network
from cluster_svc.adapters.eks import EksClusters
from cluster_svc.adapters.eks_addons import EksAddons
from cluster_svc.adapters.fsx import FsxFileSystems
from cluster_svc.adapters.iam import IamIdentity
from cluster_svc.adapters.inspect import Inspector
from cluster_svc.adapters.k8s import EksKubeFactory
from cluster_svc.adapters.s3 import S3Buckets
from cluster_svc.adapters.sagemaker import SageMakerClusters
from cluster_svc.domain.cluster_workflow import ClusterPorts


def build_ports(aws: AwsClients) -> ClusterPorts:
    return ClusterPorts(
        ec2=Ec2Network(aws),
        iam=IamIdentity(aws),
        eks=EksClusters(aws),
        buckets=S3Buckets(aws),
        sagemaker=SageMakerClusters(aws),
        fsx=FsxFileSystems(aws),
        kube=EksKubeFactory(aws.region),
        addons=EksAddons(aws),
        inspector=Inspector(aws),
    )
