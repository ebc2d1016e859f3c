"""Structural checks of stored trees before anything predicts with them.

scikit-learn's `Tree` and XGBoost's booster trust their node arrays: a child
index of 10^7 in a skops archive, or a ``left_children`` entry of 10^6 in a
booster's JSON, loads without complaint and then reads far outside the node
array on predict, which kills the process with SIGSEGV (the CLI, and the
dashboard's server for every user). `modeling.stored.codec` runs these checks
on every archive it reads, so a tampered tree is refused as `ValueError` with
the tree and node named, before any prediction:

* each tree is a tree: every internal node's two children are other nodes of
  the same tree, reached once each from the root (no cycle, no sharing), and a
  leaf has no child;
* every split's feature is one the model was fitted on (below the estimator's
  ``n_features_in_``, XGBoost's ``num_feature``), its threshold finite;
* node counts agree with the arrays (scikit-learn: ``node_count`` within the
  node array, one value row per node; XGBoost: ``num_nodes``, every per-node
  list, ``num_trees``, ``tree_info`` and ``iteration_indptr``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.tree._tree import Tree

# scikit-learn marks a leaf's children (TREE_LEAF) and feature (TREE_UNDEFINED) so.
_SK_LEAF, _SK_UNDEFINED = -1, -2
_MAX_DEPTH = 12  # how deep estimators nest (wrapper -> forest -> list -> tree ...)
# XGBoost's per-node lists in its JSON, and its root's parent (kInvalidNodeId).
_XGB_NODE_LISTS = (
    "left_children",
    "right_children",
    "parents",
    "split_indices",
    "split_conditions",
    "default_left",
    "base_weights",
)
_XGB_NO_PARENT = (2147483647, -1)


def _walk_tree(
    where: str, left: Sequence[int], right: Sequence[int], count: int, leaf: int
) -> list[int]:
    """The internal nodes of a tree given as child arrays, each checked to be reached once."""
    seen = bytearray(count)
    seen[0] = 1
    internal, stack = [], [0]
    while stack:
        node = stack.pop()
        children = (int(left[node]), int(right[node]))
        if children == (leaf, leaf):
            continue
        for child in children:
            if not 0 < child < count:
                raise ValueError(
                    f"{where}: node {node}'s child {child} is not a node of this tree "
                    f"(it has {count}, numbered 0 to {count - 1}; a leaf's children are {leaf})"
                )
            if seen[child]:
                raise ValueError(f"{where}: node {child} is reached twice; a tree has no cycles")
            seen[child] = 1
            stack.append(child)
        internal.append(node)
    return internal


def _sklearn_trees(value: Any, features: int | None, depth: int = 0) -> Iterator[tuple[Tree, Any]]:
    """Every `Tree` inside a loaded estimator, with the feature count its owner checks X for."""
    if depth > _MAX_DEPTH:
        return
    if isinstance(value, Tree):
        yield value, features
    elif isinstance(value, BaseEstimator):
        own = getattr(value, "n_features_in_", None)
        features = own if isinstance(own, int | np.integer) else features
        for item in vars(value).values():
            yield from _sklearn_trees(item, features, depth + 1)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _sklearn_trees(item, features, depth + 1)
    elif isinstance(value, np.ndarray) and value.dtype == object:
        for item in value.flat:
            yield from _sklearn_trees(item, features, depth + 1)


def check_sklearn(estimator: Any) -> None:
    """``estimator``'s scikit-learn trees are well formed; `ValueError` naming the first bad one."""
    for index, (tree, features) in enumerate(_sklearn_trees(estimator, None)):
        where = f"tree {index}"
        count, capacity = int(tree.node_count), int(tree.capacity)
        if not 1 <= count <= capacity:  # checked first: reading the arrays trusts node_count
            raise ValueError(f"{where}: node_count {count} does not match its {capacity} nodes")
        state = tree.__getstate__()
        nodes, values = state["nodes"], state["values"]
        if len(nodes) < count or len(values) < count:
            raise ValueError(f"{where}: node_count {count} does not match its arrays")
        if features is not None and tree.n_features != features:
            raise ValueError(f"{where}: it has {tree.n_features} features, its model {features}")
        nodes = nodes[:count]
        internal = _walk_tree(where, nodes["left_child"], nodes["right_child"], count, _SK_LEAF)
        feature, threshold = nodes["feature"][internal], nodes["threshold"][internal]
        bad = np.flatnonzero((feature < 0) | (feature >= tree.n_features))
        if len(bad):
            node = internal[bad[0]]
            raise ValueError(
                f"{where}: node {node} splits on feature {int(nodes['feature'][node])}, "
                f"not one of its {tree.n_features} (0 to {tree.n_features - 1})"
            )
        if not np.all(np.isfinite(threshold)):
            raise ValueError(f"{where}: a split's threshold is not a finite number")


def _int(value: Any, where: str) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        raise ValueError(f"{where}: {value!r} is not a whole number") from None


def _check_booster_tree(where: str, tree: dict[str, Any], num_feature: int) -> None:
    param = tree["tree_param"]
    count = _int(param["num_nodes"], f"{where} num_nodes")
    if count < 1:
        raise ValueError(f"{where}: num_nodes is {count}; a tree has at least its root")
    if _int(param.get("size_leaf_vector", 1), where) > 1:
        raise ValueError(f"{where}: a multi-target leaf vector, which memplan never stores")
    for name in _XGB_NODE_LISTS:
        if not isinstance(tree[name], list) or len(tree[name]) != count:
            raise ValueError(f"{where}: {name} does not have one entry for each of {count} nodes")
    if any(tree.get(name) for name in ("categories", "categories_nodes", "split_type")) and any(
        tree.get("split_type", [])
    ):
        raise ValueError(f"{where}: categorical splits, which memplan never stores")
    left = [_int(v, where) for v in tree["left_children"]]
    right = [_int(v, where) for v in tree["right_children"]]
    parents = tree["parents"]
    if parents[0] not in _XGB_NO_PARENT:
        raise ValueError(f"{where}: the root has a parent ({parents[0]!r})")
    for node in _walk_tree(where, left, right, count, -1):
        feature = _int(tree["split_indices"][node], where)
        if not 0 <= feature < num_feature:
            raise ValueError(
                f"{where}: node {node} splits on feature {feature}, "
                f"not one of its {num_feature} (0 to {num_feature - 1})"
            )
        condition = tree["split_conditions"][node]
        if not isinstance(condition, int | float) or not math.isfinite(condition):
            raise ValueError(f"{where}: node {node}'s split condition {condition!r} is not finite")
        for child in (left[node], right[node]):
            if parents[child] != node:
                raise ValueError(f"{where}: node {child}'s parent is not node {node}")


def check_booster_json(data: bytes) -> None:
    """XGBoost's JSON model ``data`` holds well-formed trees; `ValueError` naming the first bad."""
    try:
        learner = json.loads(data)["learner"]
        booster = learner["gradient_booster"]
        if booster.get("name") != "gbtree":
            raise ValueError(f"booster {booster.get('name')!r}, not gbtree (what memplan stores)")
        num_feature = _int(learner["learner_model_param"]["num_feature"], "num_feature")
        model = booster["model"]
        trees = model["trees"]
        count = _int(model["gbtree_model_param"]["num_trees"], "num_trees")
        if num_feature < 1 or not isinstance(trees, list) or count != len(trees):
            raise ValueError(f"num_trees {count} or num_feature {num_feature} does not match")
        if len(model["tree_info"]) != count or any(g != 0 for g in model["tree_info"]):
            raise ValueError("tree_info does not give one output group 0 per tree")
        indptr = model.get("iteration_indptr", [0, count])
        if indptr[0] != 0 or indptr[-1] != count or sorted(indptr) != list(indptr):
            raise ValueError(f"iteration_indptr {indptr[:5]!r}... does not cover the {count} trees")
        for index, tree in enumerate(trees):
            _check_booster_tree(f"tree {index}", tree, num_feature)
    except (KeyError, TypeError, IndexError, AttributeError, RecursionError) as error:
        raise ValueError(f"its layout is not XGBoost's ({type(error).__name__}: {error})") from None
