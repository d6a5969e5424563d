"""The platform program: one module per job, wired together by ``program.build``."""
