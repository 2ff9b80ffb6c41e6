"""``wsim``: the command-line tool.

    wsim simulate | plot | sweep | tune     # the simulator (simulator.views.cli)
    wsim check                              # every mutation of the seed's barriers, found and named
    wsim validate                           # the SM90 model against a run measured on the H200
    wsim accuracy                           # every committed measurement re-simulated and scored

The simulator's sub-commands come from :mod:`simulator.views.cli`, ``validate`` and ``accuracy``
from ``validation``; ``check``'s catalogue gets the hardware twins' counts from ``hw_kernels``. Wiring them here keeps the imports one way: ``validation`` imports the
simulator, the simulator never imports ``validation``. Exit codes: :data:`EXIT_CODES`.
"""

from __future__ import annotations

from hw_kernels.static_counts import twin_rows
from simulator.views import cli as simulator_cli
from simulator.views.cli import EXIT_CODES
from validation.accuracy import add_accuracy_parser, run_accuracy
from validation.compare import add_validate_parser, run_validate

#: name -> (add the sub-parser to argparse's sub-parsers, run it with the parsed args -> exit code).
COMMANDS = {**simulator_cli.COMMANDS,
            "check": (simulator_cli.COMMANDS["check"][0], lambda args: simulator_cli.cmd_check(args, twin_rows)),
            "validate": (add_validate_parser, run_validate),
            "accuracy": (add_accuracy_parser, run_accuracy)}


def main(argv: list[str] | None = None) -> int:
    """Run ``wsim`` with ``argv`` (default: ``sys.argv[1:]``; none: ``wsim simulate``); the exit code."""
    return simulator_cli.main(argv, COMMANDS)


__all__ = ["COMMANDS", "EXIT_CODES", "main"]
