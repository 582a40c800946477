"""Ships the Go helper's sources inside the package, so that an installed
livetrace can still build the demo service (``livetrace demo``), and builds
the compiled decoder core. The core is optional: without a C compiler the
install still succeeds and livetrace runs on the pure-Python twin (it warns
once when it does)."""

import shutil
from glob import glob
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


CCORE = "livetrace/_ccore"
# One extension from every C file of every folder (a folder per layer, see
# docs/architecture.md); hidden visibility keeps the calls and tables shared
# between them direct (only PyInit__ccore is exported). Sources include
# headers by their path from CCORE.
CORE = Extension(
    "livetrace._trace._ccore",
    sorted(glob(f"{CCORE}/**/*.c", recursive=True)),
    include_dirs=[CCORE],
    depends=sorted(glob(f"{CCORE}/**/*.h", recursive=True)),
    optional=True,
    extra_compile_args=["-O3", "-std=c99", "-fvisibility=hidden", "-Wall", "-Wno-unused-parameter"],
)

setup(cmdclass={"build_py": BuildPyWithGoHelper}, ext_modules=[CORE])
