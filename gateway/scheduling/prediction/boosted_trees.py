"""Gradient-boosted regression trees for the conditional median, in pure Python.

The wait of a late job depends on the job, the queue and the clock together
(`late_waits.py`); class medians condition on one thing at a time. This is the
learner the field would reach for (LightGBM's method, Ke et al., NeurIPS 2017), kept
small: absolute-error loss (its minimiser is the median, robust to the long tail of
waits), histogram splits on at most `bins` quantile bins per feature, trees grown
leaf-wise to `leaves` leaves of at least `min_leaf` rows, each leaf's output the median
of its rows' residuals (LightGBM's L1 leaf renewal) shrunk by `rate`.

Cost: the histograms are built by C-level counting (`Counter` over `map`), only for
the smaller child of each split (the larger is its parent's minus it), so a fit is
about rows x features x log(leaves) counted items per tree: under a second for 5,000
rows of 13 features. A fitted model is compiled into one expression (`predict`: a few
microseconds).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import accumulate, compress, pairwise, repeat
from operator import add, itemgetter, sub
from statistics import median_low
from typing import NamedTuple

# Three gradient codes per bin in a histogram key: bin * 3 + (1 + sign of the residual).
_CODES = 3


class _Tree(NamedTuple):
    # Node i: feature[i] < 0 marks a leaf whose output is value[i]; else rows with
    # x[feature[i]] <= threshold[i] go to left[i], the others to right[i].
    feature: tuple[int, ...]
    threshold: tuple[float, ...]
    left: tuple[int, ...]
    right: tuple[int, ...]
    value: tuple[float, ...]


@dataclass(frozen=True, slots=True)
class BoostedTrees:
    """A fitted model: `predict(x)` is the conditional median of the target."""

    base: float
    trees: tuple[_Tree, ...]
    # The trees as one Python expression, compiled once per fit: a walk asks at every
    # submit, and a node visited in a loop costs ten times a branch compiled.
    _function: Callable[[Sequence[float]], float] = field(init=False, compare=False,
                                                          repr=False)

    def __post_init__(self) -> None:
        numbers: list[float] = [self.base]
        body = " + ".join(["c[0]", *(_expression(tree, 0, numbers) for tree in self.trees)])
        # The source holds indices only; the numbers (any float, inf too) are bound as `c`.
        function = eval(compile(f"lambda x: {body}", "<boosted trees>", "eval"),  # noqa: S307
                        {"__builtins__": {}, "c": tuple(numbers)})
        object.__setattr__(self, "_function", function)

    def predict(self, x: Sequence[float]) -> float:
        """The model's median of the target for features `x`."""
        return self._function(x)


def _expression(tree: _Tree, node: int, numbers: list[float]) -> str:
    """A tree below `node` as nested conditional expressions (at most `leaves` deep),
    its thresholds and outputs appended to `numbers`."""
    numbers.append(tree.value[node] if tree.feature[node] < 0 else tree.threshold[node])
    at = len(numbers) - 1
    if tree.feature[node] < 0:
        return f"c[{at}]"
    return (f"({_expression(tree, tree.left[node], numbers)} if x[{tree.feature[node]}] <= "
            f"c[{at}] else {_expression(tree, tree.right[node], numbers)})")


def _edges(values: Sequence[float], bins: int) -> list[float]:
    """Upper edges of at most `bins` bins of about equal counts, a value never split
    across two and a frequent value (one with a bin's share or more) a bin of its own:
    LightGBM's greedy binning. Edges lie midway between neighbouring values."""
    counts = sorted(Counter(values).items())
    if len(counts) <= bins:
        return [(a + b) / 2.0 for (a, _), (b, _) in pairwise(counts)]
    total = len(values)
    big = [n >= total / bins for _, n in counts]
    rest_bins = bins - sum(big)
    rest = total - sum(n for (_, n), own in zip(counts, big, strict=True) if own)
    share = rest / rest_bins if rest_bins > 0 else float("inf")
    edges: list[float] = []
    filled = 0
    for i in range(len(counts) - 1):
        filled += counts[i][1]
        # Close the bin when it is full, or before or after a frequent value.
        if big[i] or big[i + 1] or filled >= share:
            edges.append((counts[i][0] + counts[i + 1][0]) / 2.0)
            filled = 0
            if len(edges) == bins - 1:
                break
    return edges


@dataclass(slots=True)
class _Leaf:
    rows: list[int]
    # Per feature, rows counted by key bin * 3 + gradient code (a flat list).
    histograms: list[list[int]]
    split: tuple[float, int, int] | None = None  # (gain, feature, bin)
    node: int = 0


def fit_boosted_trees(rows: Sequence[Sequence[float]], targets: Sequence[float],
                      trees: int = 50, leaves: int = 16, min_leaf: int = 20,
                      rate: float = 0.1, bins: int = 32) -> BoostedTrees:
    """Fit trees to the median of `targets` given `rows` (each a feature vector)."""
    count = len(rows)
    if count == 0 or len(targets) != count:
        raise ValueError("one target per row, and at least one row")
    if min_leaf < 1:
        raise ValueError("a leaf holds one row at least")
    width = len(rows[0])
    edges = [_edges([row[f] for row in rows], bins) for f in range(width)]
    # Each feature's bin per row, times the codes, so that adding a code gives a key.
    binned = [[bisect_left(edges[f], row[f]) * _CODES for row in rows] for f in range(width)]
    sizes = [(len(e) + 1) * _CODES for e in edges]
    base = median_low(targets)
    predicted = [base] * count
    grown: list[_Tree] = []
    for _ in range(trees):
        residuals = [t - p for t, p in zip(targets, predicted, strict=True)]
        codes = [1 + (r > 0) - (r < 0) for r in residuals]
        tree = _grow(list(range(count)), binned, sizes, edges, codes, residuals, leaves,
                     min_leaf, rate, predicted)
        grown.append(tree)
    return BoostedTrees(base, tuple(grown))


def _histograms(rows: list[int], binned: list[list[int]], sizes: list[int],
                codes: list[int]) -> list[list[int]]:
    if len(rows) == 1:
        row = rows[0]
        found = [[0] * size for size in sizes]
        for histogram, column in zip(found, binned, strict=True):
            histogram[column[row] + codes[row]] = 1
        return found
    pick = itemgetter(*rows)
    row_codes = pick(codes)
    counted = [Counter(map(add, pick(column), row_codes)) for column in binned]
    return [list(map(c.get, range(size), repeat(0)))
            for c, size in zip(counted, sizes, strict=True)]


def _best_split(leaf: _Leaf, min_leaf: int) -> None:
    """The split of the leaf with the largest gain in sum(g)^2 / n (unit hessians)."""
    total = len(leaf.rows)
    best: tuple[float, int, int] | None = None
    for feature, histogram in enumerate(leaf.histograms):
        if len(histogram) < 2 * _CODES:
            continue
        below, zero, above = histogram[0::3], histogram[1::3], histogram[2::3]
        sums = list(map(sub, above, below))
        whole = sum(sums)
        lefts = list(accumulate(map(add, map(add, below, zero), above)))
        # The cuts that leave `min_leaf` rows on each side: one run of positions.
        first, last = bisect_left(lefts, min_leaf), bisect_right(lefts, total - min_leaf)
        if first >= last:
            continue
        gains = [left_s * left_s / left_n + (whole - left_s) ** 2 / (total - left_n)
                 for left_n, left_s in zip(lefts[first:last],
                                           list(accumulate(sums))[first:last], strict=True)]
        top = max(gains)
        gain = top - whole * whole / total  # over the leaf's own: a split must gain
        if gain > 1e-9 and (best is None or gain > best[0]):
            best = (gain, feature, first + gains.index(top))
    leaf.split = best


def _grow(rows: list[int], binned: list[list[int]], sizes: list[int],
          edges: list[list[float]], codes: list[int], residuals: list[float], leaves: int,
          min_leaf: int, rate: float, predicted: list[float]) -> _Tree:
    """One tree, grown leaf-wise on the residuals' signs; adds its output to `predicted`."""
    feature: list[int] = [-1]
    threshold: list[float] = [0.0]
    left: list[int] = [-1]
    right: list[int] = [-1]
    open_leaves = [_Leaf(rows, _histograms(rows, binned, sizes, codes))]
    _best_split(open_leaves[0], min_leaf)
    while len(open_leaves) < leaves:
        splittable = [leaf for leaf in open_leaves if leaf.split is not None]
        if not splittable:
            break
        leaf = max(splittable, key=_gain)
        assert leaf.split is not None
        _, f, position = leaf.split
        cut = position * _CODES
        keys = itemgetter(*leaf.rows)(binned[f])  # a leaf holds 2 x min_leaf rows at least
        low = list(compress(leaf.rows, map(cut.__ge__, keys)))
        high = list(compress(leaf.rows, map(cut.__lt__, keys)))
        small, large = (low, high) if len(low) <= len(high) else (high, low)
        # Count the smaller child; the larger one's counts are its parent's minus those.
        small_histograms = _histograms(small, binned, sizes, codes)
        large_histograms = [list(map(sub, parent, part)) for parent, part
                            in zip(leaf.histograms, small_histograms, strict=True)]
        children = []
        for part, histograms in ((small, small_histograms), (large, large_histograms)):
            child = _Leaf(part, histograms, node=len(feature))
            feature.append(-1)
            threshold.append(0.0)
            left.append(-1)
            right.append(-1)
            _best_split(child, min_leaf)
            children.append(child)
        node = leaf.node
        feature[node] = f
        threshold[node] = edges[f][position]
        low_child, high_child = children if small is low else children[::-1]
        left[node], right[node] = low_child.node, high_child.node
        leaf.histograms = []  # split: its counts are no longer needed
        open_leaves.remove(leaf)
        open_leaves += children
    value = [0.0] * len(feature)
    for leaf in open_leaves:
        output = rate * median_low([residuals[r] for r in leaf.rows])
        value[leaf.node] = output
        for r in leaf.rows:
            predicted[r] += output
    return _Tree(tuple(feature), tuple(threshold), tuple(left), tuple(right), tuple(value))


def _gain(leaf: _Leaf) -> float:
    return leaf.split[0] if leaf.split is not None else 0.0
