"""The barrier protocol: mbarriers, CUTLASS pipelines, arrival counts, protocol knobs, deadlock analysis."""
