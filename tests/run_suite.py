"""Entry point for tests that start the CLI in a subprocess with the test feature extractor registered."""

import sys

import fid_extractor  # noqa: F401  (registers "rand-test" with torch-fidelity)

from suite.cli import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
