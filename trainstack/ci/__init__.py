"""What CI needs beyond the other verbs: which specs a git change touches, and whether a released
component version changed without a new version."""
