"""``make sanitize``: the compiled parsers built with AddressSanitizer and UndefinedBehaviorSanitizer,
run under the tests that feed them hostile bytes.

The extension modules (the log decoder, the cleaner's kernels, the Avro, Protobuf and JSON
Schema column decoders: every one the checkout's build has) parse untrusted input in C.  The normal
build cannot tell a read one byte past a buffer from a correct one; this one stops at the first
invalid access, overflow, misaligned or null-pointer use and prints where.  Steps:

1. copy the package to ``build/sanitize/tree`` and build its extensions in place there with
   ``-fsanitize=address,undefined`` (the normal build in the checkout is left alone); every module
   must build (the extensions are optional in setup.py: a silent fallback would test nothing);
2. run the format, registry and fuzz tests (Spark's are left out: the JVM does not run with the
   sanitizer runtime preloaded) with that tree first on ``PYTHONPATH`` and the runtimes preloaded
   (Python itself is not instrumented); the tests check peak RSS only where it is comparable
   (``KLA_SANITIZED``: shadow memory and the quarantine of freed blocks count in RSS);
3. fail on the first sanitizer report: the process that finds one prints it and exits non-zero
   (pytest captures ``sys.stdout``/``sys.stderr`` only, so a report written by C to file
   descriptor 2 reaches the terminal even when the process dies; a test running a subprocess
   fails on its exit status).

``make sanitize-threads`` (``--thread``): the same with ThreadSanitizer (``-fsanitize=thread``, the
tree in ``build/sanitize/thread``), under the tests marked ``threads``: the compiled decoders run on
several threads at once, as the local engine's export tasks run them, and so do the cleaner's
kernels, as a program cleaning partitions on its own threads runs them.  Their process-wide state
(and an offset map in use) is only to be touched with the GIL held; TSan follows the GIL (a pthread
mutex) and reports any access that nothing orders.  pyarrow runs on the system allocator there (its
mimalloc orders its memory with atomics TSan cannot see in an uninstrumented library), and reports
inside libarrow/libparquet (uninstrumented, their own threads) are suppressed: ours are the concern.

Needs gcc with its sanitizer runtimes (``libasan``, ``libubsan``, ``libtsan``: on Debian, ``gcc-12``
depends on them); says so and exits 2 without them.  Arguments after the script name go to pytest.
"""

from __future__ import annotations

import importlib.machinery
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / "build" / "sanitize"
FLAGS = "-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -g"
THREAD_FLAGS = "-fsanitize=thread -fno-omit-frame-pointer -g -O1"

TESTS = ("tests/format", "tests/registry", "tests/fuzz")
#: Tests that need a Spark session (a JVM under the preloaded runtime hangs or aborts).
NO_SPARK = ("-m", "not fuzz_long and not spark and not cluster", "--ignore=tests/registry/test_typed_spark.py")
#: --thread: the tests that run the compiled decoders on threads (none needs Spark).
THREAD_TESTS = ("tests/format", "tests/registry", "tests/cli", "-m", "threads and not spark",
                "--ignore=tests/registry/test_typed_spark.py")
#: --thread: reports from the uninstrumented libraries' own code (pyarrow's threads and allocator).
THREAD_SUPPRESSIONS = ("race:libarrow", "race:libparquet", "mutex:libarrow", "mutex:libparquet",
                       "mutex:libstdc++",     # Arrow's thread pools (our extensions are C)
                       *(f"called_from_lib:{lib}.so" for lib in ("libarrow", "libparquet", "libarrow_dataset",
                                                                  "libarrow_acero", "libarrow_python")))


def runtimes(cc: str, libs: tuple[str, ...] = ("libasan.so", "libubsan.so")) -> list[str]:
    """gcc's shared sanitizer runtimes ``libs`` (empty when ``cc`` has one of them not)."""
    found = []
    for lib in libs:
        try:
            out = subprocess.run([cc, f"-print-file-name={lib}"], capture_output=True, text=True, check=True)
        except (OSError, subprocess.CalledProcessError):
            return []
        path = out.stdout.strip()
        if not os.path.isabs(path) or not os.path.exists(path):   # unknown: the compiler echoes the name
            return []
        found.append(path)
    return found


def extension_modules(package: Path) -> list[str]:
    """The dotted names of the extension modules built under ``package`` (the checkout's normal
    build, which ``make sanitize`` depends on: whatever setup.py builds, the sanitized tree must)."""
    found = set()
    for path in package.rglob("*"):
        # the most specific suffix first (".cpython-311-x86_64-linux-gnu.so" before ".so")
        suffix = next((x for x in importlib.machinery.EXTENSION_SUFFIXES if path.name.endswith(x)), None)
        if suffix:
            found.add(".".join(path.relative_to(package.parent).with_name(path.name[: -len(suffix)]).parts))
    return sorted(found)


def build(cc: str, modules: list[str], flags: str = FLAGS, tree: Path = WORK / "tree") -> Path:
    """A copy of the package with its extensions built with the sanitizers of ``flags``; the tree's path."""
    shutil.rmtree(tree, ignore_errors=True)
    tree.mkdir(parents=True)
    shutil.copytree(ROOT / "kafka_format", tree / "kafka_format",
                    ignore=shutil.ignore_patterns("*.so", "__pycache__", "*.pyc"))
    shutil.copy2(ROOT / "setup.py", tree / "setup.py")
    env = {**os.environ, "CC": f"{cc} {flags}", "LDSHARED": f"{cc} -shared {flags}"}
    log = tree.parent / f"{tree.name}-build.log"
    with log.open("w") as out:
        rc = subprocess.run([sys.executable, "setup.py", "build_ext", "--inplace"], cwd=tree, env=env,
                            stdout=out, stderr=subprocess.STDOUT, check=False).returncode
    missing = [m for m in modules if m not in extension_modules(tree / "kafka_format")]
    if rc or missing:
        sys.exit(f"sanitized build failed (exit {rc}; not built: {missing or 'none'}); see {log}")
    return tree


def main(argv: list[str]) -> int:
    thread = "--thread" in argv
    argv = [a for a in argv if a != "--thread"]
    cc = os.environ.get("CC", "gcc").split()[0]
    libs = ("libtsan.so",) if thread else ("libasan.so", "libubsan.so")
    preload = runtimes(cc, libs)
    if not preload:
        print(f"make {'sanitize-threads' if thread else 'sanitize'}: {cc} has no sanitizer runtime "
              f"({', '.join(libs)}); install gcc with them to run it", file=sys.stderr)
        return 2
    modules = extension_modules(ROOT / "kafka_format")
    if not modules:
        sys.exit("make sanitize: the checkout has no compiled extensions to compare with (run make setup)")
    tree = build(cc, modules, THREAD_FLAGS, WORK / "thread") if thread else build(cc, modules)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(tree), *filter(None, [os.environ.get("PYTHONPATH")])]),
        "LD_PRELOAD": " ".join(preload),
        "KLA_SANITIZED": "1",
        # no current directory first on sys.path (python -c, -m pytest): the checkout's own
        # kafka_format (normal build) would shadow the tree's
        "PYTHONSAFEPATH": "1",
    }
    if thread:
        suppressions = WORK / "thread-suppressions.txt"
        suppressions.write_text("".join(line + "\n" for line in THREAD_SUPPRESSIONS))
        env["TSAN_OPTIONS"] = f"halt_on_error=1:report_signal_unsafe=0:suppressions={suppressions}"
        env["ARROW_DEFAULT_MEMORY_POOL"] = "system"
    else:
        # leaks: Python's own allocations at exit are not ours; allocator_may_return_null: the
        # tests of absurd lengths expect MemoryError, not an abort
        env["ASAN_OPTIONS"] = "detect_leaks=0:allocator_may_return_null=1:handle_segv=1"
        env["UBSAN_OPTIONS"] = "print_stacktrace=1:halt_on_error=1"
    # every module the tests import must be the tree's sanitized one
    names = ["kafka_format", *modules]
    probe = (f"import importlib; paths = [importlib.import_module(n).__file__ for n in {names!r}]; "
             f"wrong = [p for p in paths if not p.startswith({str(tree) + os.sep!r})]; "
             "assert not wrong, wrong")
    prefix: list[str] = []
    done = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=False)
    if done.returncode and "unexpected memory mapping" in done.stderr and shutil.which("setarch"):
        # TSan's fixed memory layout and a kernel placing libraries anywhere (high ASLR entropy)
        prefix = ["setarch", platform.machine(), "-R"]
        done = subprocess.run([*prefix, sys.executable, "-c", probe], env=env, capture_output=True, text=True,
                              check=False)
    if done.returncode:
        sys.stderr.write(done.stderr)
        return done.returncode
    tests = THREAD_TESTS if thread else (*TESTS, *NO_SPARK)
    return subprocess.run([*prefix, sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--capture=sys",
                           *tests, *argv], cwd=ROOT, env=env, check=False).returncode


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
