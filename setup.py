"""Build the compiled columnar decode loop (kafka_format.records._fastdecode), the log cleaner's
kernels (kafka_format.log.cleaner._kernels: MD5, the offset map, v2 record encoding) and the column
decoders of typed exports (kafka_format.registry._avrocolumns, _protocolumns, _jsoncolumns, each
with the shared _columns.c).

The extensions are optional at build time: when no C compiler is available the
package still installs and the plain reference paths are used (with a warning,
see kafka_format.records.decoder; typed columns then decode with the reference decoders alone).

Codecs in C (``_fastcodecs.c``): liblz4, libzstd and libdeflate (gzip) are loaded when the module
is imported (``_codeclibs.c``: dlopen by soname, no development files needed; their headers, when
present, only check our declarations), zlib (gzip without libdeflate) is compiled in when its
development files are found (a test program compiles and links); a codec whose library is missing
is decompressed by the Python path (kafka_format.records.compression), so every build works.
Snappy's raw format is decoded by our own C (no library).  ``KAFKA_FORMAT_C_CODECS=none`` (or a
comma list such as ``lz4,zstd``; ``gzip:zlib`` or ``gzip:libdeflate`` chooses gzip's library)
limits the set, at build time and again when the module is imported.
"""

import os
import shutil
import sys
import tempfile
from pathlib import Path

from setuptools import Extension, setup

_SOURCE = Path(__file__).parent / "kafka_format" / "records" / "_fastdecode.c"

# codec: its (macro, header, library, a function of it); no library: nothing to link at build time
_CODEC_LIBS = {
    "gzip": [("KF_HAVE_DEFLATE", "", "", ""),          # libdeflate.so.0, loaded at import (_codeclibs.c)
             ("KF_HAVE_ZLIB", "zlib.h", "z", "inflateInit2_")],
    "lz4": [("KF_HAVE_LZ4", "", "", "")],              # liblz4.so.1, loaded at import
    "zstd": [("KF_HAVE_ZSTD", "", "", "")],            # libzstd.so.1, loaded at import
    "snappy": [("KF_HAVE_SNAPPY", "", "", "")],        # our own decoder
}


def _links(header: str, library: str, function: str) -> bool:
    """Whether a program including ``header`` and calling ``function`` links with ``-l library``."""
    try:
        from setuptools._distutils import ccompiler, sysconfig
    except ImportError:  # pragma: no cover - setuptools without vendored distutils
        return False
    compiler = ccompiler.new_compiler()
    sysconfig.customize_compiler(compiler)
    tmp = tempfile.mkdtemp(prefix="kf-codec-")
    try:
        src = os.path.join(tmp, "probe.c")
        with open(src, "w") as f:
            f.write(f"#include <{header}>\nint main(void) {{ void *p = (void *)&{function}; return p == 0; }}\n")
        objects = compiler.compile([src], output_dir=tmp)
        compiler.link_executable(objects, os.path.join(tmp, "probe"), libraries=[library])
        return True
    except Exception:  # noqa: BLE001 - any failure to build the probe means: not available
        # (not CompileError/LinkError by name: setuptools' compilers raise the classes of whichever
        # distutils copy they were loaded from, which need not be setuptools._distutils.errors')
        return False
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _codec_options() -> tuple[list[tuple[str, str]], list[str]]:
    wanted = os.environ.get("KAFKA_FORMAT_C_CODECS", "gzip,lz4,zstd,snappy").strip().lower()
    names = [] if wanted == "none" else [n.split(":")[0].strip() for n in wanted.split(",") if n.strip()]
    macros: list[tuple[str, str]] = []
    libraries: list[str] = []
    for name in dict.fromkeys(names):
        for macro, header, library, function in _CODEC_LIBS.get(name, []):
            if not library:
                macros.append((macro, "1"))
            elif _links(header, library, function):
                macros.append((macro, "1"))
                libraries.append(library)
            else:
                print(f"kafka_format: {header} / lib{library} not found: {name} needs its run-time library "
                      "(or is decompressed in Python)", file=sys.stderr)
    return macros, libraries


def _extensions() -> list[Extension]:
    if not _SOURCE.exists():
        return []
    macros, libraries = _codec_options()
    return [
        Extension(
            "kafka_format.records._fastdecode",
            sources=["kafka_format/records/_fastdecode.c", "kafka_format/records/_fastcodecs.c",
                     "kafka_format/records/_fastcrc.c", "kafka_format/records/_fastbuf.c",
                     "kafka_format/records/_fastarrow.c", "kafka_format/records/_fastdir.c",
                     "kafka_format/records/_fastrecords.c", "kafka_format/records/_fastscan.c",
                     "kafka_format/records/_fastxxh.c", "kafka_format/records/_codeclibs.c"],
            depends=["kafka_format/records/_codeclibs.h", "kafka_format/records/_fastcodecs.h",
                     "kafka_format/records/_fastcrc.h", "kafka_format/records/_fastbuf.h",
                     "kafka_format/records/_fastformat.h",
                     "kafka_format/records/_fastrecords.h", "kafka_format/records/_fastxxh.h"],
            define_macros=macros,
            libraries=libraries,
            extra_compile_args=["-O3", "-std=c11", "-fno-strict-aliasing"],
            optional=True,
        ),
        Extension(   # the log cleaner's MD5, offset map and record encoder (log/cleaner/kernels.py)
            "kafka_format.log.cleaner._kernels",
            sources=["kafka_format/log/cleaner/_kernels.c"],
            extra_compile_args=["-O3", "-std=c11", "-fno-strict-aliasing"],
            optional=True,
        ),
        *(
            Extension(   # typed Avro, Protobuf and JSON Schema columns (registry/*_columns.py)
                f"kafka_format.registry._{name}columns",
                sources=[f"kafka_format/registry/_{name}columns.c", "kafka_format/registry/_columns.c"],
                depends=["kafka_format/registry/_columns.h"],
                extra_compile_args=["-O3", "-std=gnu11", "-fno-strict-aliasing"],
                optional=True,
            )
            for name in ("avro", "proto", "json")
        ),
    ]


setup(ext_modules=_extensions())
