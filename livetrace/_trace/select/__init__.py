"""Choosing events and spans: filters that run in the core, before Python
objects are made."""
