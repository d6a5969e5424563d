"""The local-runner tests take the shared `cli` fixture (tests/conftest.py)."""
