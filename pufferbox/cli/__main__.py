"""``python -m pufferbox.cli``: the same as the ``pufferbox`` script."""

from pufferbox.cli import main

main()
