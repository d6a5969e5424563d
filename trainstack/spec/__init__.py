"""Component and Run specs: load → validate → normalize → frozen model."""

from trainstack.spec.loader import Loader, load_component, load_run
from trainstack.spec.model import Component, Run

__all__ = ["Component", "Loader", "Run", "load_component", "load_run"]
