"""Build the optional C accelerator of the flatbuffer reader; metadata lives in pyproject.toml.

The extension is optional: if no C compiler is available the build continues and edgepart's
reader uses its NumPy implementation alone (same results, slower on small models).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "edgepart.tflite._fbcore",
            sources=["edgepart/tflite/_fbcore.c"],
            optional=True,
            extra_compile_args=["-O2"],
        )
    ]
)
