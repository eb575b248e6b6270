"""What ``klogs dump`` does with what it is given (issue 33): URIs, missing files, files that are not
Kafka's.

* Every URI the jobs open is dumped from its store: ``s3://`` with pyarrow's options and ``s3a://``
  with Hadoop's settings, against the run's S3-compatible server (moto, which refuses requests not
  signed with its one key: tests/s3store.py), credentials inside the URI.  The lines are those of
  the same files dumped from local disk (whose text the conformance suite compares with Kafka's),
  the URI shown with its secret as ``***``; the secret appears in no byte of stdout or stderr, in
  text and ``--json`` mode, for every kind of file, a missing object, refused credentials and an
  unknown scheme.
* A missing file prints Kafka's ``NoSuchFileException`` line and exits 1; a file Kafka ignores (no
  suffix it dumps) prints Kafka's ``Ignoring unknown file`` line (Kafka 3.x: the Scala tool's
  ``StringIndexOutOfBoundsException`` for a name without a '.') and exits 1, because nothing of it
  was dumped; a ``.log`` that is not a segment exits 1 with what Kafka prints.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from s3store import KEY, SECRET, SECRET_IN_URI

from kafka_format.cli import main

REPO = Path(__file__).resolve().parents[2]
PARTITIONS = REPO / "data_samples" / "logdirs" / "broker-1"
BUCKET = "dump-inputs"
SECRET_FORMS = (SECRET, SECRET_IN_URI, SECRET.replace("/", "%2F"), SECRET.replace("+", "%2B"))
# one partition with every kind of file: logs, indexes, producer snapshots, a transaction index
TXN = PARTITIONS / "transactions-0"
COMPACTED = PARTITIONS / "compacted-0"   # non-consecutive offsets: the end-of-run report


def _dump(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["dump", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _leaks(*texts: str) -> list[str]:
    return [s for s in SECRET_FORMS for t in texts if s in t]


def _blocks(err: str) -> list[str]:
    """stderr's report blocks (a heading and its indented lines), sorted."""
    blocks: list[list[str]] = []
    for line in err.splitlines():
        if blocks and line.startswith("  "):
            blocks[-1].append(line)
        else:
            blocks.append([line])
    return sorted("\n".join(b) for b in blocks)


def _files(directory: Path) -> list[Path]:
    return sorted(p for p in directory.iterdir()
                  if p.suffix in (".log", ".index", ".timeindex", ".snapshot", ".txnindex"))


@pytest.fixture(scope="module")
def store(moto_s3):  # type: ignore[no-untyped-def]
    moto_s3.bucket(BUCKET, {"t": PARTITIONS})
    return moto_s3


def _s3(store, rel: str) -> str:  # type: ignore[no-untyped-def]
    return f"s3://{KEY}:{SECRET_IN_URI}@{BUCKET}/t/{rel}?{store.query}"


def _shown_s3(store, rel: str) -> str:  # type: ignore[no-untyped-def]
    return f"s3://{KEY}:***@{BUCKET}/t/{rel}?{store.query}"


@pytest.mark.parametrize("flags", [[], ["--deep-iteration"], ["--deep-iteration", "--print-data-log"],
                                   ["--verify-index-only"]], ids=lambda f: " ".join(f) or "plain")
def test_s3_uri_dumps_what_the_local_files_dump(store, capsys: pytest.CaptureFixture[str],  # type: ignore[no-untyped-def]
                                                flags: list[str]) -> None:
    local = _files(TXN) + _files(COMPACTED)
    uris = [_s3(store, p.relative_to(PARTITIONS).as_posix()) for p in local]
    code_local, out_local, err_local = _dump(capsys, *flags, *map(str, local))
    code, out, err = _dump(capsys, *flags, *uris)
    assert not _leaks(out, err)
    assert code == code_local == 0
    renamed_out, renamed_err = out, err
    for path in local:
        shown = _shown_s3(store, path.relative_to(PARTITIONS).as_posix())
        assert f"Dumping {shown}\n" in out
        renamed_out = renamed_out.replace(shown, str(path))
        renamed_err = renamed_err.replace(shown, str(path))
    assert renamed_out == out_local
    # the reports' keys differ, so does their hash order: the same blocks
    assert _blocks(renamed_err) == _blocks(err_local)
    if flags[:1] == ["--deep-iteration"]:   # the compacted logs have gaps: reported with the URI
        assert f"Non-consecutive offsets in {_shown_s3(store, 'compacted-0/00000000000000000000.log')}" in err


def test_s3_uri_json_never_shows_the_secret(store, capsys: pytest.CaptureFixture[str]) -> None:  # type: ignore[no-untyped-def]
    uris = [_s3(store, p.relative_to(PARTITIONS).as_posix()) for p in _files(TXN)]
    code, out, err = _dump(capsys, "--json", "--deep-iteration", *uris)
    assert code == 0 and not _leaks(out, err)
    objects = [json.loads(line) for line in out.splitlines()]
    files = {o["file"] for o in objects if "file" in o}
    assert files == {_shown_s3(store, p.relative_to(PARTITIONS).as_posix()) for p in _files(TXN)
                     if p.stat().st_size}      # an empty index has no objects
    assert sum(o["type"] == "summary" for o in objects) == sum(p.suffix == ".log" for p in _files(TXN))


def test_s3a_uri_with_hadoop_settings(store, capsys: pytest.CaptureFixture[str]) -> None:  # type: ignore[no-untyped-def]
    from kafka_format.storage import s3a

    log = TXN / "00000000000000000000.log"
    s3a.use_settings(store.hadoop_settings(BUCKET, credentials=False))   # endpoint only: the key is in the URI
    try:
        code, out, err = _dump(capsys, "--deep-iteration",
                               f"s3a://{KEY}:{SECRET_IN_URI}@{BUCKET}/t/transactions-0/{log.name}")
    finally:
        s3a.use_settings(None)
    code_local, out_local, _ = _dump(capsys, "--deep-iteration", str(log))
    assert code == code_local == 0 and not _leaks(out, err)
    shown = f"s3a://{KEY}:***@{BUCKET}/t/transactions-0/{log.name}"
    assert out.replace(shown, str(log)) == out_local


def test_missing_object_is_kafkas_no_such_file(store, capsys: pytest.CaptureFixture[str]) -> None:  # type: ignore[no-untyped-def]
    code, out, err = _dump(capsys, _s3(store, "t-0/00000000000000000000.log"))
    shown = _shown_s3(store, "t-0/00000000000000000000.log")
    assert code == 1 and not _leaks(out, err)
    assert out.splitlines() == [f"Dumping {shown}"]
    assert err.splitlines() == [f'Exception in thread "main" java.nio.file.NoSuchFileException: {shown}']


def test_refused_credentials_are_one_line(store, capsys: pytest.CaptureFixture[str]) -> None:  # type: ignore[no-untyped-def]
    wrong = f"s3://{KEY}:not{SECRET_IN_URI}@{BUCKET}/t/transactions-0/00000000000000000000.log?{store.query}"
    code, out, err = _dump(capsys, wrong)
    assert code == 2
    assert not _leaks(out, err) and "not" + SECRET_IN_URI not in out + err
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"klogs dump: s3://{KEY}:***@{BUCKET}/t/transactions-0/")


def test_unknown_scheme_is_refused_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _dump(capsys, f"nosuchfs://{KEY}:{SECRET_IN_URI}@host/t-0/00000000000000000000.log")
    assert code == 2 and not _leaks(out, err)
    assert out.splitlines() == [f"Dumping nosuchfs://{KEY}:***@host/t-0/00000000000000000000.log"]
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"klogs dump: nosuchfs://{KEY}:***@host/")


def test_file_uri_is_the_local_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = TXN / "00000000000000000000.log"
    code, out, err = _dump(capsys, "--deep-iteration", log.as_uri())
    code_local, out_local, err_local = _dump(capsys, "--deep-iteration", str(log))
    assert code == code_local == 0
    assert out.replace(log.as_uri(), str(log)) == out_local and err == err_local


# --- local files that are not what they seem ---------------------------------------------------------

def test_missing_file_is_kafkas_line_and_exit_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nonexistent.log"
    for version in ("4.4", "3.9"):
        code, out, err = _dump(capsys, "--kafka-version", version, str(missing))
        assert code == 1
        assert out.splitlines() == [f"Dumping {missing}"]
        assert err.splitlines() == [f'Exception in thread "main" java.nio.file.NoSuchFileException: {missing}']


def test_a_file_without_a_suffix_is_not_a_success(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    passwd = tmp_path / "passwd"
    passwd.write_text("root:x:0:0:root:/root:/bin/bash\n")
    code, out, err = _dump(capsys, str(passwd))
    assert code == 1
    assert out.splitlines() == [f"Dumping {passwd}"]
    assert err.splitlines() == [f"Ignoring unknown file {passwd}"]      # DumpLogSegments.java (4.3+)
    code, out, err = _dump(capsys, "--kafka-version", "3.9", str(passwd), str(TXN / "00000000000000000000.log"))
    assert code == 1
    assert out.splitlines() == [f"Dumping {passwd}"]                    # the Scala tool dies on it
    assert err.splitlines() == ['Exception in thread "main" java.lang.StringIndexOutOfBoundsException: '
                                "begin -1, end 6, length 6"]
    code, out, err = _dump(capsys, "--json", str(passwd))
    assert code == 1 and out == "" and err.splitlines() == [f"Ignoring unknown file {passwd}"]


def test_an_unknown_suffix_is_not_a_success(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("not a segment\n")
    log = TXN / "00000000000000000000.log"
    for version in ("4.4", "3.9"):
        code, out, err = _dump(capsys, "--kafka-version", version, str(notes), str(log))
        assert code == 1
        assert out.splitlines()[0] == f"Dumping {notes}" and f"Dumping {log}" in out.splitlines()
        assert err.splitlines() == [f"Ignoring unknown file {notes}"]
        assert _dump(capsys, "--kafka-version", version, str(log))[0] == 0


def test_text_named_like_a_segment_is_not_a_success(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fake = tmp_path / "00000000000000000000.log"
    text = "root:x:0:0:root:/root:/bin/bash\ndaemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n"
    fake.write_text(text)
    code, out, err = _dump(capsys, str(fake))
    # the first 12 bytes read as offset and size: "root:x:0" / ":0:r" = 0x3a303a72, far past the end
    assert code == 1
    assert out.splitlines() == [f"Dumping {fake}", "Log starting offset: 0",
                                f"Found {len(text)} invalid bytes at the end of {fake.name}"]
    assert err == ""
    named = tmp_path / "hosts.log"
    named.write_text(text)
    code, out, err = _dump(capsys, str(named))
    assert code == 1 and out.splitlines() == [f"Dumping {named}"]
    assert err.splitlines() == ['Exception in thread "main" java.lang.NumberFormatException: For input string: "hosts"']
