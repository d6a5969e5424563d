"""Entry point ``pulumi up`` runs for the platform project (``main: infra/`` in Pulumi.yaml).

The program itself lives in ``trainstack.infra.platform`` so ``trainstack plan`` can run the very
same code offline under Pulumi's mocks.
"""

from trainstack.infra.platform.program import main

main()
