"""The share of a node's vCPUs and memory a run's pod may not ask for: the kubelet's reservation
and every node's DaemonSets take it. The one figure of the fit check (the policy rules
pod-fits-node-pool and job-fits-pools); a module of its own so the policy layer reads it without
importing the platform's config (seconds of imports)."""

NODE_HEADROOM = 0.15
