"""Events as text: JSON lines, terminal lines, and Go's own dump formats."""
