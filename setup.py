"""Build hooks; metadata lives in pyproject.toml.

* The optional C accelerators of the flatbuffer reader and of the placement evaluation kernel.
  If no C compiler (or, for the walker, no NumPy headers) is available the build continues and
  the reader uses its NumPy implementation alone (same results, slower on small models).
* The shipped data folders (``delegates/``, ``device_profiles/``) are copied into the package as
  ``edgepart/_data/`` so a built wheel finds them (a source checkout reads them in place).
"""

import shutil
from pathlib import Path

from setuptools import Extension, setup

try:  # the walker builds NumPy arrays directly (NumPy is a build requirement in pyproject.toml)
    import numpy

    NUMPY_INCLUDE = [numpy.get_include()]
except ImportError:  # pragma: no cover - then the walker fails to build, which is optional
    NUMPY_INCLUDE = []
from setuptools.command.build_py import build_py

DATA_DIRS = ("delegates", "device_profiles")


class build_py_with_data(build_py):
    def run(self) -> None:
        super().run()
        root = Path(__file__).resolve().parent
        for name in DATA_DIRS:
            target = Path(self.build_lib) / "edgepart" / "_data" / name
            if target.exists():
                shutil.rmtree(target)
            shutil.copytree(root / name, target)


setup(
    cmdclass={"build_py": build_py_with_data},
    ext_modules=[
        Extension(
            "edgepart.tflite._fbcore",
            sources=["edgepart/tflite/_fbcore.c"],
            depends=["edgepart/tflite/_fbread.h"],
            optional=True,
            extra_compile_args=["-O2"],
        ),
        Extension(
            "edgepart.tflite._fbwalk",
            sources=["edgepart/tflite/_fbwalk.c"],
            depends=["edgepart/tflite/_fbread.h"],
            include_dirs=NUMPY_INCLUDE,
            optional=True,
            extra_compile_args=["-O2"],
        ),
        # The placement evaluation kernel: sums must match the Python kernel bit for bit, so
        # a*b+c is never fused into one instruction.
        Extension(
            "edgepart.placement._evalc",
            sources=["edgepart/placement/_evalc.c"],
            optional=True,
            extra_compile_args=["-O2", "-ffp-contract=off"],
        ),
    ],
)
