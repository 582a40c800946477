"""The Go toolchain from Python: finding and running go, building and running
the demo service, naming PCs with addr2line."""
