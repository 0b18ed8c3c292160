"""Managed features: actual state in, the steps that make it equal the request out (pure).

Each feature is a dependency-aware chain, decided by one function per feature from what AWS and
the cluster report now (`Actual`) and what the caller asked (`FeaturesChange`):

- training operator: EKS add-on `amazon-sagemaker-hyperpod-training-operator`, after cert-manager;
  disabling removes that add-on only (cert-manager stays: other features use it).
- inference operator: the operator's manifests (namespace, CRDs, service account, controller),
  after cert-manager; disabling removes the controller and its service account (the CRDs and
  the endpoints made with them stay).
- managed tiered checkpointing: the identity chain (IAM role whose trust is the cluster's OIDC
  provider limited to one service account, its inline policy, the Kubernetes service account
  annotated `eks.amazonaws.com/role-arn`) and `TieredStorageConfig`; disabling turns the config
  off and removes exactly that chain (the OIDC provider belongs to the cluster and stays).
- managed autoscaling: the cluster role (trusted by hyperpod.sagemaker.amazonaws.com),
  `AutoScaling{Mode: Enable, AutoScalerType: Karpenter}` with continuous provisioning, then a
  HyperpodNodeClass over the cluster's instance groups and a NodePool; disabling removes the two
  objects, sets Mode Disable, then removes the cluster role Hyperpilot made (HyperPod assumes it
  only for autoscaling; enabling again makes it again).

Steps are data: AWS calls, objects to apply or remove, and waits. A stage runs the steps in
order up to the first wait, then reads actual state again and decides again, so a redelivered
command repeats nothing that already took effect; the dry-run plan is the same list.

One module per role: objects.py (what a cluster's features are called, and the
policies and Kubernetes objects they make), actual.py (what is there now), steps.py (what makes
it equal the request), plan.py (the diff, the dry run and the panel) and stages.py (the
workflow).
"""
