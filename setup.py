"""Ships the Go helper's sources inside the package, so that an installed
livetrace can still build the demo service (``livetrace demo``), and builds
the compiled decoder core. The core is optional: without a C compiler the
install still succeeds and livetrace runs on the pure-Python twin (it warns
once when it does)."""

import shutil
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_py import build_py


class BuildPyWithGoHelper(build_py):
    def run(self) -> None:
        super().run()
        src = Path(__file__).parent / "go_helper"
        dst = Path(self.build_lib) / "livetrace" / "_go_helper"
        shutil.rmtree(dst, ignore_errors=True)
        shutil.copytree(src, dst, ignore=shutil.ignore_patterns("*_test.go"))


CSRC = "livetrace/_trace/csrc"
CORE = Extension("livetrace._trace._ccore", [f"{CSRC}/_ccore.c", f"{CSRC}/_ccore_legacy.c"],
                 depends=[f"{CSRC}/_ccore_common.h"], optional=True,
                 extra_compile_args=["-O3", "-std=c99", "-Wall", "-Wno-unused-parameter"])

setup(cmdclass={"build_py": BuildPyWithGoHelper}, ext_modules=[CORE])
