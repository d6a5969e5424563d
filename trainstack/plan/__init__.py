"""Offline plans: run a Pulumi program under mocks and list what ``pulumi up`` would create."""
