"""Ships the Go helper's sources inside the package, so that an installed
livetrace can still build the demo service (``livetrace demo``)."""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py


class BuildPyWithGoHelper(build_py):
    def run(self) -> None:
        super().run()
        src = Path(__file__).parent / "go_helper"
        dst = Path(self.build_lib) / "livetrace" / "_go_helper"
        shutil.rmtree(dst, ignore_errors=True)
        shutil.copytree(src, dst, ignore=shutil.ignore_patterns("*_test.go"))


setup(cmdclass={"build_py": BuildPyWithGoHelper})
