"""Kueue v0.19.2 as trainstack uses it: its API's names (`api`) and how its plain-pod groups
admit a KubeDL job (`podgroup`), each fact citing Kueue's source."""
