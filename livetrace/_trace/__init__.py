"""Decoding Go execution traces, sans-IO: bytes in, events out, for every
format from Go 1.5 to 1.27. No sockets, no files, no trio.

spec/      the format tables (codes, names, arguments, kinds), per family
version.py trace format versions: the header sniffer and what each version has
model/     the one event model both families decode into
modern/    Go 1.22+: wire records, generations, ordering
legacy/    Go 1.5-1.21: wire events, reading, ordering, conversion, live
accel.py   which implementation runs: the compiled core (built from livetrace/_ccore/) or its twin
"""
