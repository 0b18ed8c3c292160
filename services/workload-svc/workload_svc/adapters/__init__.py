"""The outside world of workload-svc: the clusters' Kubernetes APIs and SageMaker."""
