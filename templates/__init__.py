"""The job templates (`*.j2`), shipped as the package `trainstack.templates` (pyproject.toml maps
it to this folder). This file makes the folder a regular package: setuptools' editable install
finds a package mapped outside `trainstack/` only by its `__init__.py`, and `importlib.resources`
then reads the templates from here in a checkout and from the wheel once installed. A platform
project's own `templates/` beside its Pulumi.yaml needs none (docs/templates.md)."""
