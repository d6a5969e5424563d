"""Policies: rules over the resources a stack registers, run offline and as a CrossGuard pack."""
