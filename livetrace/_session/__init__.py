"""The trio shell: connecting to a helper, sessions, live decoding off the
trio thread, recording to files."""
