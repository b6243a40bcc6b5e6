"""What a reader sees: the published Table 1, the paper-layout tables, the charts."""
