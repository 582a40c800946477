"""Finding Go processes and attaching to them: what a running process is and
what it offers. Sans-IO where it can be: bytes of an executable in, facts out.

elf.py        the little of ELF that locating Go build information needs
modinfo.py    the module information text (path, mod, dep, =>, build lines)
buildinfo.py  read_build_info: the Go version and modules an executable was built with
announce.py   the records Go helpers write when they listen: which process offers one, where
probe.py      which of a process's TCP ports answers /debug/pprof/
processes.py  the process table: Go or not (and why), and how to attach to each Go one
resolve.py    pid:N and executable names, turned into an address connect() knows
"""
