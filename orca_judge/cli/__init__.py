"""One thin module per `orca-*` console script."""
