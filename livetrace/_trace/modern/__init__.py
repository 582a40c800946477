"""The modern trace format (Go 1.22+): self-contained generations."""
