"""The std::sort / std::unordered_set simulations against the real libstdc++ (when g++ exists)."""

from __future__ import annotations

import random
import shutil
import subprocess
from pathlib import Path

import pytest

from edgepart.memory._libstdcxx import _heap_sort, std_sort, unordered_set_order

_SOURCE = r"""
#include <algorithm>
#include <cstdio>
#include <string>
#include <unordered_set>
#include <vector>
// Each line: mode n values... ; mode s = std::sort pairs by key, h = partial_sort (heap),
// u = unordered_set iteration order.
int main() {
  char mode; int n;
  while (scanf(" %c %d", &mode, &n) == 2) {
    if (mode == 'u') {
      std::unordered_set<int> s;
      for (int i = 0; i < n; ++i) { int k; scanf("%d", &k); s.insert(k); }
      for (int k : s) printf("%d ", k);
    } else {
      std::vector<std::pair<int, int>> v(n);
      for (int i = 0; i < n; ++i) { scanf("%d", &v[i].first); v[i].second = i; }
      auto less = [](const std::pair<int, int>& a, const std::pair<int, int>& b) {
        return a.first < b.first; };
      if (mode == 's') std::sort(v.begin(), v.end(), less);
      else std::partial_sort(v.begin(), v.end(), v.end(), less);
      for (auto& p : v) printf("%d ", p.second);
    }
    printf("\n");
  }
}
"""


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Path:
    gxx = shutil.which("g++")
    if gxx is None:
        pytest.skip("g++ not installed: cannot build the libstdc++ reference")
    d = tmp_path_factory.mktemp("libstdcxx")
    (d / "ref.cc").write_text(_SOURCE)
    subprocess.run([gxx, "-O1", "-o", str(d / "ref"), str(d / "ref.cc")], check=True)
    return d / "ref"


def _cases(seed: int) -> list[list[int]]:
    rng = random.Random(seed)
    out = []
    for k in range(300):
        n = rng.choice([1, 2, 3, 15, 16, 17, 40, 100, 333, 1500])
        hi = rng.choice([1, 4, 30, 10_000])
        keys = [rng.randint(0, hi) for _ in range(n)]
        if k % 5 == 0:
            keys.sort(reverse=k % 10 == 0)
        out.append(keys)
    return out


def _run(ref: Path, mode: str, cases: list[list[int]]) -> list[list[int]]:
    text = "".join(f"{mode} {len(c)} {' '.join(map(str, c))}\n" for c in cases)
    done = subprocess.run([str(ref)], input=text, capture_output=True, text=True, check=True)
    return [list(map(int, line.split())) for line in done.stdout.splitlines()]


def test_std_sort_matches_libstdcxx(reference: Path) -> None:
    cases = _cases(1)
    for keys, want in zip(cases, _run(reference, "s", cases), strict=True):
        got = [i for i, _ in std_sort(list(enumerate(keys)), lambda a, b: a[1] < b[1])]
        assert got == want


def test_heap_fallback_matches_partial_sort(reference: Path) -> None:
    cases = _cases(2)
    for keys, want in zip(cases, _run(reference, "h", cases), strict=True):
        items = list(enumerate(keys))
        _heap_sort(items, 0, len(items), lambda a, b: a[1] < b[1])
        assert [i for i, _ in items] == want


def test_unordered_set_order_matches_libstdcxx(reference: Path) -> None:
    cases = _cases(3)
    for keys, want in zip(cases, _run(reference, "u", cases), strict=True):
        assert unordered_set_order(keys) == want


def test_std_sort_sorts_without_a_compiler() -> None:
    rng = random.Random(0)
    for _ in range(200):
        keys = [rng.randint(0, 5) for _ in range(rng.randint(0, 80))]
        assert sorted(keys) == std_sort(keys, lambda a, b: a < b)
    # Small distinct-bucket sets iterate most recent first.
    assert unordered_set_order([169, 175]) == [175, 169]
