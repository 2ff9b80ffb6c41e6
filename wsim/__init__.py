"""The ``wsim`` command: the simulator's sub-commands and the ones that check it against measurements.

The one package that imports both ``simulator`` and ``validation`` (see :mod:`wsim.cli`); the
simulator's Python API is :mod:`simulator`.
"""
