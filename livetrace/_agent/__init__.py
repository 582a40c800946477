"""The fleet agent: ``livetrace agent`` (docs/fleet.md)."""
