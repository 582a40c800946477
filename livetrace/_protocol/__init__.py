"""The session protocol between the Go helper and a consumer, sans-IO: frames
in and out of byte buffers, and the addresses a helper listens on."""
