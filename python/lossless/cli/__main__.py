"""``python -m lossless.cli``: the same command line as the ``lossless`` script."""

from lossless.cli import main

main()
