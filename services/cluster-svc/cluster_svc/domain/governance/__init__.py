"""Task governance (pure): the task-governance EKS add-on and the cluster's scheduler config
(actual.py, steps.py), teams as SageMaker compute quotas (steps.py), and why a job waits
(pending.py). Steps are the managed features' steps (`Call`, `Wait`): each stage runs them up
to the first wait, then reads and decides again, and the dry run is the same list.
"""
