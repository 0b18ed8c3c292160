"""The Kubernetes side of the dependency set: each module declares one component's manifests
as Python data (the rendered form of its Helm chart), plus the EKS add-ons."""
