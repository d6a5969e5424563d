"""trainstack: ML training on your own Kubernetes cluster, as code."""

__version__ = "0.1.0"
API_VERSION = "trainstack.dev/v1"
