"""The replayer: open-loop, timestamp-faithful shadow replay of a recording."""
