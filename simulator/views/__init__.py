"""What a user sees: reports, the CLI, traces as Perfetto JSON, plots and stall breakdowns."""
