"""The regression gate: are two runs comparable, and how do they differ item by item."""
