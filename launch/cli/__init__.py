"""The `t3rl` command line: the Typer app (`launch.cli.app`) and one module per command group."""


def main() -> None:
    """The `t3rl` console script (`launch.cli:main`); importing this package alone stays cheap."""
    from launch.cli.app import main as run

    run()
