"""The per-run program: one stack per run, holding exactly what the renderer produced."""
