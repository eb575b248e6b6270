"""Build the compiled columnar decode loop (kafka_format._fastdecode).

The extension is optional at build time: when no C compiler is available the
package still installs and the plain reference decoder is used (with a warning,
see kafka_format.decoder).
"""

from pathlib import Path

from setuptools import Extension, setup

_SOURCE = Path(__file__).parent / "kafka_format" / "_fastdecode.c"

setup(
    ext_modules=[
        Extension(
            "kafka_format._fastdecode",
            sources=["kafka_format/_fastdecode.c"],
            extra_compile_args=["-O3", "-std=c11", "-fno-strict-aliasing"],
            optional=True,
        )
    ]
    if _SOURCE.exists()
    else []
)
