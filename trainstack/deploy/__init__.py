"""Per-run stacks through Pulumi's Automation API: deploy, status and destroy one run."""
