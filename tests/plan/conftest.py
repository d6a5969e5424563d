"""These tests run the platform and run programs under the infra tests' Pulumi mocks and stand-ins
(tests/infra/conftest.py): the fixtures are found by name here."""

from tests.infra.conftest import kubedl_root as kubedl_root
from tests.infra.conftest import mocks as mocks
from tests.infra.conftest import ready as ready
