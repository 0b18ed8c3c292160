"""Instance groups of a HyperPod cluster: add, update by explicit diff, delete, software update.

Every decision is a pure function of the cluster's ACTUAL state (DescribeCluster) and the
command, shared by the workflow stage that acts and the planner that answers a dry run:

- An update compares each requested field with the group's described value; what is equal is
  dropped. Nothing left: the operation ends `noop` without a call. Otherwise UpdateCluster
  carries exactly one group entry, rebuilt from that group's described configuration with only
  the requested fields changed (never a list rebuilt from an allow-list, which silently drops
  members such as KubernetesConfig or TrainingPlanArn).
- Capacity type, training plan, network interface mode (efa-only) and instance type are fixed
  for the group's life: a different value is a rule violation naming the way out (a new group).
- An add settles the whole group at once; a group in another zone gets its /20 compute subnet
  from `network.ensure_compute_subnet`, recorded so deleting the cluster removes it.
- A delete sends `InstanceGroupsToDelete` only; a software update sends UpdateClusterSoftware
  with a rolling deployment config.

described.py: the actual state (DescribeCluster) as the decisions read it;
rules.py: the rules a change must pass (each broken one a `Problem` naming the way out);
decisions.py: what a command would do (`Decision`), shared by the stages and the dry runs;
stages.py: the workflows' stages. Their reads and writes of the database are in
cluster_svc/records/.
"""
