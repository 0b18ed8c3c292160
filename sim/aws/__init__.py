"""The simulated AWS: one HTTP endpoint, moto for what it covers, the project's own simulation
for what moto lacks or gets wrong. Domain services get the endpoint URL and credentials only.

Served by the simulation (sim.aws.hyperpod, .eks, .service_quotas, .sagemaker_extras):
- SageMaker HyperPod: Create/Describe/List/Update/DeleteCluster, List/DescribeClusterNode(s),
  BatchAdd/Delete/Reboot/ReplaceClusterNodes, UpdateClusterSoftware, StartClusterHealthCheck,
  ListClusterEvents, DescribeClusterEvent; List/DescribeTrainingPlan(s); MLflow tracking
  servers; Add/List/DeleteTags on those resources; task governance (cluster scheduler configs,
  compute quotas: sim.aws.task_governance).
- EKS, the whole API the product uses: clusters, updates, versions, node groups, add-ons and
  their versions, access entries and policies, pod identity associations, tags.
- Service Quotas: quotas, AWS defaults, services, increase requests.
Served by moto (pinned in pyproject.toml), with a few answers corrected (sim.aws.overlays):
EC2 (VPC, subnets, gateways, NAT, route tables, security groups, AZs, instance types), IAM
(incl. OIDC providers), STS, S3, FSx, CloudFormation, SSM, and the rest of SageMaker.

Every request, moto's included, is validated against botocore's model before any handler runs
(sim.aws.validation, docs/simulator.md); errors use each protocol's AWS error shape
(sim.aws.errors). Time moves per a TimeProfile (sim.aws.clock).
Faults (sim.aws.faults), the call log (sim.aws.calllog), the inventory (sim.aws.inventory) and
the account (sim.aws.account) are reachable in-process on SimulatedAws and over HTTP under
/_sim/ (sim.aws.admin).
"""

from sim.aws.server import SimulatedAws

__all__ = ["SimulatedAws"]
