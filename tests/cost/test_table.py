"""Latency tables: lookup (measured, interpolated, fallback), merge, round trip, validation."""

from __future__ import annotations

import copy
import json

import pytest

from edgepart.cost.table import (
    Entry,
    LatencyTable,
    ProcessorTable,
    Stats,
    load_table,
    table_from_dict,
)
from edgepart.errors import LatencyTableError


def stats(v: float) -> Stats:
    return Stats(v, v * 0.9, v * 1.2, v * 0.8, 10, 3, 1)


def entry(key: str, family: str, flops: float, value: float, nbytes: float = 0.0) -> Entry:
    return Entry(key, family, "op", flops, nbytes, stats(value), value)


def table() -> LatencyTable:
    pt = ProcessorTable(
        "cpu", device="test", executor="xnnpack", threads=1, invoke_overhead=stats(1e-6)
    )
    pt.add(entry("CONV[small]", "CONV", 1e6, 1e-4))
    pt.add(entry("CONV[big]", "CONV", 3e6, 2e-4))
    pt.add(entry("RESHAPE[a]", "RESHAPE", 0, 5e-6, nbytes=1000))
    return LatencyTable({"cpu": pt})


def test_measured_entry_wins():
    est = table().processor("cpu").lookup("CONV[big]", "CONV", 123.0, 0)
    assert est is not None and est.source == "measured" and est.seconds == 2e-4


def test_interpolates_between_family_members():
    est = table().processor("cpu").lookup("CONV[mid]", "CONV", 2e6, 0)
    assert est is not None and est.source == "interpolated"
    assert est.seconds == pytest.approx(1.5e-4)


def test_extrapolates_proportionally_outside_range():
    pt = table().processor("cpu")
    big = pt.lookup("CONV[huge]", "CONV", 6e6, 0)
    assert big is not None and big.seconds == pytest.approx(4e-4)
    small = pt.lookup("CONV[tiny]", "CONV", 5e5, 0)
    assert small is not None and small.seconds == pytest.approx(5e-5)


def test_ops_without_flops_scale_by_bytes():
    est = table().processor("cpu").lookup("RESHAPE[b]", "RESHAPE", 0, 3000)
    assert est is not None and est.seconds == pytest.approx(1.5e-5)


def test_unknown_family_falls_back():
    assert table().processor("cpu").lookup("ADD[x]", "ADD", 10, 10) is None


def test_round_trip_is_deterministic(tmp_path):
    t = table()
    t.save(tmp_path / "a.json")
    t2 = load_table(tmp_path / "a.json")
    t2.save(tmp_path / "b.json")
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()
    assert t2.processor("cpu").entries["CONV[big]"].value_s == 2e-4


def test_merge_adds_and_overrides():
    a = table()
    pt = ProcessorTable("cpu", executor="xnnpack", threads=1)
    pt.add(entry("CONV[big]", "CONV", 3e6, 9e-4))
    pt.add(entry("ADD[x]", "ADD", 10, 1e-6))
    gpu = ProcessorTable("gpu", executor="gpu", threads=1)
    merged = a.merge(LatencyTable({"cpu": pt, "gpu": gpu}))
    cpu = merged.processor("cpu")
    assert cpu.entries["CONV[big]"].value_s == 9e-4
    assert "ADD[x]" in cpu.entries and "CONV[small]" in cpu.entries
    assert set(merged.processors) == {"cpu", "gpu"}
    assert a.processor("cpu").entries["CONV[big]"].value_s == 2e-4  # inputs untouched


def test_merge_refuses_different_executors():
    other = LatencyTable({"cpu": ProcessorTable("cpu", executor="builtin", threads=1)})
    with pytest.raises(LatencyTableError, match="rename one processor"):
        table().merge(other)


def test_restat_recomputes_values():
    t = table().restat("min")
    e = t.processor("cpu").entries["CONV[big]"]
    assert e.value_s == pytest.approx(2e-4 * 0.8 - 1e-6 * 0.8)


def test_missing_processor_lists_present():
    with pytest.raises(LatencyTableError, match=r"no processor 'gpu'.*\['cpu'\]"):
        table().processor("gpu")


GOOD = table().to_json()


def broken(path: list, value) -> dict:
    doc = copy.deepcopy(GOOD)
    cur = doc
    for k in path[:-1]:
        cur = cur[k]
    if value is KeyError:
        del cur[path[-1]]
    else:
        cur[path[-1]] = value
    return doc


@pytest.mark.parametrize(
    ("path", "value", "where"),
    [
        (["format"], "nope", "$.format"),
        (["version"], 2, "$.version"),
        (["processors"], [], "$.processors"),
        (["processors", "cpu", "entries"], {}, "$.processors.cpu.entries"),
        (["processors", "cpu", "entries", 0, "key"], 5, "$.processors.cpu.entries[0].key"),
        (["processors", "cpu", "entries", 0, "kind"], "blob", "$.processors.cpu.entries[0].kind"),
        (
            ["processors", "cpu", "entries", 0, "stats", "median_s"],
            -1.0,
            "$.processors.cpu.entries[0].stats.median_s",
        ),
        (
            ["processors", "cpu", "entries", 0, "stats", "count"],
            0,
            "$.processors.cpu.entries[0].stats.count",
        ),
        (
            ["processors", "cpu", "entries", 0, "stats", "p90_s"],
            0.0,
            "$.processors.cpu.entries[0].stats",
        ),
        (
            ["processors", "cpu", "entries", 1, "stats", "min_s"],
            KeyError,
            "$.processors.cpu.entries[1].stats.min_s",
        ),
        (["processors", "cpu", "threads"], "two", "$.processors.cpu.threads"),
        (["processors", "cpu", "statistic"], "mean", "$.processors.cpu.statistic"),
        (
            ["processors", "cpu", "delegate_overhead"],
            {"median_s": 1.0},
            "$.processors.cpu.delegate_overhead.p10_s",
        ),
        (
            ["processors", "cpu", "entries", 2, "flops"],
            float("inf"),
            "$.processors.cpu.entries[2].flops",
        ),
    ],
)
def test_validation_names_file_and_path(tmp_path, path, value, where):
    p = tmp_path / "t.json"
    p.write_text(json.dumps(broken(path, value)))
    with pytest.raises(LatencyTableError) as info:
        load_table(p)
    msg = str(info.value)
    assert str(p) in msg and where in msg and "\n" not in msg


def test_duplicate_keys_rejected():
    doc = copy.deepcopy(GOOD)
    entries = doc["processors"]["cpu"]["entries"]
    entries.append(copy.deepcopy(entries[0]))
    with pytest.raises(LatencyTableError, match=r"entries\[3\].*duplicate key"):
        table_from_dict(doc, "t.json")


def test_not_json_and_missing(tmp_path):
    p = tmp_path / "bad.json"
    p.write_text("{oops")
    with pytest.raises(LatencyTableError, match="invalid JSON at line"):
        load_table(p)
    with pytest.raises(LatencyTableError, match="no such latency table"):
        load_table(tmp_path / "missing.json")
