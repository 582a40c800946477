"""The flight recorder: the last seconds of a live trace in memory, written when a trigger fires."""
