"""The signal to compose with Hydra instead."""


class Unsupported(Exception):
    """A command line or config file the direct composition does not reproduce exactly (or an error,
    which Hydra's composition reports in its own words)."""
