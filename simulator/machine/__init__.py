"""The machine: sourced arch constants (``arch``, ``constants``) and the memory system (``memory``)."""
