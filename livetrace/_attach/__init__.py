"""Finding Go processes and attaching to them: what a running process is and
what it offers. Sans-IO where it can be: bytes of an executable in, facts out.

elf.py        the little of ELF that locating Go build information needs
modinfo.py    the module information text (path, mod, dep, =>, build lines)
buildinfo.py  read_build_info: the Go version and modules an executable was built with
"""
