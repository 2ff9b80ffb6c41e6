"""Kernel models: one config module and one model module per kernel, the tile schedulers and the
CUTLASS rules (``can_implement``, stage-count formulas) their configs carry."""
