"""The legacy trace format (Go 1.5-1.21, and the pre-release gotrace)."""
