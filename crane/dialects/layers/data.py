"""Data-movement kinds: ``concat``, ``reshape``, ``flatten``, ``transpose``, ``slice``,
``embedding`` (a gather of table rows). They cost no FLOPs."""

from __future__ import annotations

from crane.dialects.layers.costs import zero
from crane.dialects.layers.definition import (
    NOT_SPATIAL,
    REQUIRED,
    LayerKind,
    Lowering,
    Onnx,
    ParamType,
    Tiling,
    Work,
    param,
)
from crane.dialects.layers.rules import (
    Attrs,
    Resolved,
    ShapeError,
    Weights,
    check_axis,
    fmt,
    get_int,
    no_weights,
)
from crane.dialects.layers.values import Shape, numel


def concat(ins: tuple[Shape, ...], attrs: Attrs) -> Resolved:
    first = ins[0]
    axis = check_axis("concat", first, get_int(attrs, "axis"))
    for index, shape in enumerate(ins[1:], start=2):
        if len(shape) != len(first):
            raise ShapeError(f"concat input {index} has rank {len(shape)} {fmt(shape)}, input 1 has rank {len(first)} {fmt(first)}")
        for dim, (d0, d1) in enumerate(zip(first, shape, strict=True)):
            if dim != axis and d0 != d1:
                raise ShapeError(
                    f"concat input {index} {fmt(shape)} has {d1} at dimension {dim} but input 1 "
                    f"{fmt(first)} has {d0}; only dimension {axis} may differ"
                )
    total = sum(shape[axis] for shape in ins)
    return (*first[:axis], total, *first[axis + 1 :]), {**attrs, "axis": axis}


def reshape(ins: tuple[Shape, ...], attrs: Attrs) -> Resolved:
    (x,) = ins
    target = attrs["shape"]
    assert isinstance(target, tuple)
    if target.count(-1) > 1 or any(d == 0 or d < -1 for d in target):
        raise ShapeError(f"reshape shape={fmt(target)} may hold positive sizes and at most one -1", "shape")
    known = numel(tuple(d for d in target if d != -1))
    total = numel(x)
    if -1 in target and total % known == 0:
        target = tuple(total // known if d == -1 else d for d in target)
    if numel(target) != total:
        raise ShapeError(
            f"reshape of {fmt(x)} ({total} elements) to {fmt(tuple(attrs['shape']))} "  # type: ignore[arg-type]
            f"({known} elements{' times the -1' if -1 in target else ''}) changes the element count",
            "shape",
        )
    return target, {**attrs, "shape": target}


def flatten(ins: tuple[Shape, ...], attrs: Attrs) -> Resolved:
    (x,) = ins
    start = check_axis("flatten", x, get_int(attrs, "start"), "start")
    return (*x[:start], numel(x[start:])), {**attrs, "start": start}


def transpose(ins: tuple[Shape, ...], attrs: Attrs) -> Resolved:
    (x,) = ins
    perm = attrs["perm"]
    assert isinstance(perm, tuple)
    if sorted(perm) != list(range(len(x))):
        raise ShapeError(f"transpose perm={fmt(perm)} is not a permutation of the {len(x)} dimensions of {fmt(x)}", "perm")
    return tuple(x[p] for p in perm), dict(attrs)


def slice_(ins: tuple[Shape, ...], attrs: Attrs) -> Resolved:
    (x,) = ins
    axis = check_axis("slice", x, get_int(attrs, "axis"))
    start, stop = get_int(attrs, "start"), get_int(attrs, "stop")
    if not 0 <= start < stop <= x[axis]:
        raise ShapeError(
            f"slice {start}..{stop} does not fit dimension {axis} of {fmt(x)} (size {x[axis]}); "
            f"it needs 0 <= start < stop <= {x[axis]}", "stop",
        )
    return (*x[:axis], stop - start, *x[axis + 1 :]), {**attrs, "axis": axis}


def embedding(ins: tuple[Shape, ...], attrs: Attrs) -> Resolved:
    return (*ins[0], get_int(attrs, "dim")), dict(attrs)


def embedding_weights(ins: tuple[Shape, ...], attrs: Attrs) -> Weights:
    return (("table", (get_int(attrs, "vocab"), get_int(attrs, "dim"))),)


_MOVES_DATA = Tiling.ends_chain(NOT_SPATIAL)

KINDS = (
    LayerKind("concat", "join tensors along one axis", ("x",),
              (param("axis", ParamType.INT, 1, "axis to join along"),),
              concat, no_weights, zero, zero, lowering=Lowering.ALONG_AXIS, tiling=_MOVES_DATA,
              work=Work.TRANSPARENT, onnx=Onnx.converted("Concat", "Pad"), variadic=True),
    LayerKind("reshape", "same elements, new shape (one -1 is inferred)", ("x",),
              (param("shape", ParamType.INTS, REQUIRED, "the new shape"),),
              reshape, no_weights, zero, zero, lowering=Lowering.RESHAPE, tiling=_MOVES_DATA,
              work=Work.TRANSPARENT,
              onnx=Onnx.converted("Reshape", "Flatten", "Squeeze", "Unsqueeze", "Gather",
                                  "GatherND", "GatherElements", "ReduceMean", "Slice", "Where")),
    LayerKind("flatten", "merge dimensions start.. into one", ("x",),
              (param("start", ParamType.INT, 1, "first dimension to merge"),),
              flatten, no_weights, zero, zero, lowering=Lowering.RESHAPE, tiling=_MOVES_DATA,
              work=Work.TRANSPARENT, onnx=Onnx.converted("Flatten")),
    LayerKind("transpose", "permute dimensions", ("x",),
              (param("perm", ParamType.INTS, REQUIRED, "output dimension i is input dimension perm[i]"),),
              transpose, no_weights, zero, zero, lowering=Lowering.PERMUTE, tiling=_MOVES_DATA,
              work=Work.TRANSPARENT, onnx=Onnx.converted("Transpose", "Gemm")),
    LayerKind(
        "slice", "the elements start..stop (stop exclusive) of one axis", ("x",),
        (
            param("axis", ParamType.INT, REQUIRED, "axis to cut"),
            param("start", ParamType.INT, 0, "first index kept"),
            param("stop", ParamType.INT, REQUIRED, "first index dropped"),
        ),
        slice_, no_weights, zero, zero, lowering=Lowering.ALONG_AXIS, tiling=_MOVES_DATA,
        work=Work.TRANSPARENT, onnx=Onnx.converted("Slice", "Split", "Gather", "GatherND", "GatherElements", "Pad"),
    ),
    LayerKind(
        "embedding", "look up rows of a (vocab, dim) table by integer ids", ("ids",),
        (
            param("vocab", ParamType.POS_INT, REQUIRED, "number of rows"),
            param("dim", ParamType.POS_INT, REQUIRED, "row width"),
            param("dtype", ParamType.DTYPE, "f32", "dtype of the table and the result"),
        ),
        embedding, embedding_weights, zero, zero, lowering=Lowering.GATHER, tiling=_MOVES_DATA,
        work=Work.GATHER, onnx=Onnx.converted("Gather", "And", "Or", "Not", "Where"), int_inputs=frozenset({0}),
    ),
)
"""The data-movement kinds, in the order ``LAYER_KINDS`` lists them."""
