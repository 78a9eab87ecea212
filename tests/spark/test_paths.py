"""Paths as Spark's file sources take them: files, directories, globs, lists, filters, mixed formats."""

from __future__ import annotations

import gzip
import shutil
from collections import Counter

import pytest
from pyspark.errors import AnalysisException

from .expected import MOCK_AIOKAFKA, TANSU_AIOKAFKA_PCAPNG, TANSU_CONFLUENT, TCPFLOW_DIR, exchanges


def loaded(df) -> Counter:
    """(file name, connection, correlation id, status) of every row: what was read, from where."""
    return Counter(
        (r.capture_file.rsplit("/", 1)[1], r.connection_id, r.correlation_id, r.status)
        for r in df.select("capture_file", "connection_id", "correlation_id", "status").collect()
    )


def expected(*paths, name=None) -> Counter:
    out = Counter()
    for p in paths:
        out.update(((name or p.name), e.connection_id, e.correlation_id, e.status) for e in exchanges(p))
    return out


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """a/one.pcap, a/b/two.pcapng, a/b/c/three.pcap, a/notes.txt, a/.hidden.pcap"""
    root = tmp_path_factory.mktemp("captures") / "a"
    (root / "b" / "c").mkdir(parents=True)
    shutil.copy(TANSU_CONFLUENT, root / "one.pcap")
    shutil.copy(TANSU_AIOKAFKA_PCAPNG, root / "b" / "two.pcapng")
    shutil.copy(MOCK_AIOKAFKA, root / "b" / "c" / "three.pcap")
    (root / "notes.txt").write_text("not a capture")
    shutil.copy(MOCK_AIOKAFKA, root / ".hidden.pcap")
    return root


def read(spark, paths, **options):
    return spark.read.format("kafka-wire").options(**options).load(paths)


def test_directory_glob_list_recursive_and_filter(spark, folder):
    # One union, one job: each branch tagged by a literal column.
    from pyspark.sql import functions as F

    cases = {
        "directory": read(spark, str(folder)),
        "glob": read(spark, str(folder / "b" / "*.pcap*")),
        "list": read(spark, [str(folder / "one.pcap"), str(folder / "b" / "two.pcapng")]),
        "recursive": read(spark, str(folder), recursiveFileLookup="true"),
        "filter": read(spark, str(folder), recursiveFileLookup="true", pathGlobFilter="*.pcap"),
    }
    union = None
    for name, df in cases.items():
        tagged = df.select(F.lit(name).alias("case"), "capture_file", "connection_id", "correlation_id", "status")
        union = tagged if union is None else union.unionByName(tagged)
    got = {name: Counter() for name in cases}
    for r in union.collect():
        got[r.case][(r.capture_file.rsplit("/", 1)[1], r.connection_id, r.correlation_id, r.status)] += 1
    one = expected(TANSU_CONFLUENT, name="one.pcap")
    two = expected(TANSU_AIOKAFKA_PCAPNG, name="two.pcapng")
    three = expected(MOCK_AIOKAFKA, name="three.pcap")
    assert got["directory"] == one  # only files directly in it; notes.txt and .hidden.pcap skipped
    assert got["glob"] == two
    assert got["list"] == one + two
    assert got["recursive"] == one + two + three
    assert got["filter"] == one + three


def test_mixed_pcap_pcapng_gzip_and_stream_dump_in_one_load(spark, tmp_path):
    gz = tmp_path / "tansu_confluent.pcap.gz"
    with open(TANSU_CONFLUENT, "rb") as src, gzip.open(gz, "wb") as dst:
        shutil.copyfileobj(src, dst)
    df = read(spark, [str(MOCK_AIOKAFKA), str(TANSU_AIOKAFKA_PCAPNG), str(gz), str(TCPFLOW_DIR)])
    # tcpflow names files SRC-DST; the pair is read once, through the requests file (to broker port 33325)
    client_file = next(p for p in TCPFLOW_DIR.iterdir() if p.name.endswith(".33325"))
    want = (
        expected(MOCK_AIOKAFKA)
        + expected(TANSU_AIOKAFKA_PCAPNG)
        + expected(TANSU_CONFLUENT, name=gz.name)
        + expected(client_file)
    )
    assert loaded(df) == want
    assert sum(want.values()) == 59 + 51 + 69 + 4


def test_missing_path_is_an_error_naming_it(spark, tmp_path):
    missing = tmp_path / "nope.pcap"
    with pytest.raises(AnalysisException, match=r"PATH_NOT_FOUND.*nope\.pcap"):
        read(spark, str(missing)).collect()
    with pytest.raises(AnalysisException, match="PATH_NOT_FOUND"):
        read(spark, str(tmp_path / "*.nothing")).collect()
