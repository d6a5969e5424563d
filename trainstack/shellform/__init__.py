"""The component's command as `sh -c` will parse it: `rewrite` (contract variables made
split-proof) and `reeval` (a contract variable that eval or `sh -c` would parse again as code).
A package of its own, below spec and contract: validation and the contract read one analysis."""
