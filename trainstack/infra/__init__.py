"""Pulumi programs: the platform (ack and kubeconfig modes) and the per-run program.

Nothing here creates resources at import time; every module exposes functions that do, so the
programs can run under ``pulumi up`` (via ``infra/__main__.py``), under the Automation API, and
offline under Pulumi's mocks (``trainstack plan``).
"""
