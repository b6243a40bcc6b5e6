"""One thin module per console script: parse the arguments, call the rooms, print, exit."""
