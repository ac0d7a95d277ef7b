"""A traced JAX function (``jax.make_jaxpr``'s ClosedJaxpr) as an ONNX model: the translator behind
``agents.policies.onnx_export``. Host machinery: it walks the jaxpr once and writes ONNX nodes; nothing here is jitted.

Why a translator of our own rather than jax2onnx: jax2onnx's current release requires orbax-checkpoint < 0.11.37
(this project needs >= 0.12) and the release that installs beside it (0.13) no longer loads its plugins on jax 0.10.
A policy network needs about 40 primitives, each a few lines here; one it does not know is an ``OnnxExportError``
that names it, never a wrong graph. The tests compare every translated network with JAX to 1e-5.

Shapes. The function is traced with a symbolic batch dimension (``jax.export.symbolic_shape("B")``); every shape
that holds it (``B``, ``38*B``) is computed in the graph from the input that carries it, so the file takes any batch
size. Equations whose inputs are all constants (parameters, literals, ``iota``) and whose outputs have static
shapes are evaluated here, once, and stored as initializers.
"""

from __future__ import annotations

import itertools

import jax
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

#: the ONNX operator set the translation writes (onnxruntime >= 1.14 runs it: Python and onnxruntime-node)
OPSET = 18
#: the IR version written: the lowest that opset 18 allows, so older runtimes load the file too
IR_VERSION = 8

_ELEMENTWISE = {
    "add": "Add",
    "sub": "Sub",
    "mul": "Mul",
    "div": "Div",
    "max": "Max",
    "min": "Min",
    "pow": "Pow",
    "tanh": "Tanh",
    "logistic": "Sigmoid",
    "exp": "Exp",
    "log": "Log",
    "sqrt": "Sqrt",
    "neg": "Neg",
    "abs": "Abs",
    "sign": "Sign",
    "floor": "Floor",
    "ceil": "Ceil",
    "erf": "Erf",
    "sin": "Sin",
    "cos": "Cos",
    "gt": "Greater",
    "lt": "Less",
    "ge": "GreaterOrEqual",
    "le": "LessOrEqual",
    "eq": "Equal",
}
_LOGICAL = {
    "and": ("And", "BitwiseAnd"),
    "or": ("Or", "BitwiseOr"),
    "xor": ("Xor", "BitwiseXor"),
    "not": ("Not", "BitwiseNot"),
}
_REDUCTIONS = {
    "reduce_sum": "ReduceSum",
    "reduce_max": "ReduceMax",
    "reduce_min": "ReduceMin",
    "reduce_prod": "ReduceProd",
    "reduce_or": "ReduceMax",
    "reduce_and": "ReduceMin",
}
_IDENTITY = ("copy", "copy_p", "optimization_barrier")
#: primitives whose body is a jaxpr of their own, inlined: (primitive, parameter holding the jaxpr)
_CALLS = {
    "pjit": "jaxpr",
    "jit": "jaxpr",
    "closed_call": "call_jaxpr",
    "core_call": "call_jaxpr",
    "custom_jvp_call": "call_jaxpr",
    "custom_vjp_call": "call_jaxpr",
    "custom_vjp_call_jaxpr": "fun_jaxpr",
    "remat": "jaxpr",
    "checkpoint": "jaxpr",
}


class OnnxExportError(ValueError):
    """A function the translator cannot write as ONNX (the message names the primitive or the shape)."""


def _static(dim) -> bool:
    return isinstance(dim, (int, np.integer))


def _onnx_dtype(dtype) -> int:
    return helper.np_dtype_to_tensor_dtype(np.dtype(dtype))


class _Graph:
    """The nodes and initializers being written, and the value of every jaxpr variable: an ONNX tensor name or a
    numpy constant (``np.ndarray``, folded at export time)."""

    def __init__(self, batch_symbol):
        self.nodes, self.initializers = [], []
        self._ids = itertools.count()
        self._const_names: dict[int, str] = {}
        self._kept = []  # every array named, so that no id in _const_names is reused while the graph lives
        self.batch_symbol = batch_symbol
        self.batch_tensor = None  # int64[1]: the batch size, read from the input that carries it

    def fresh(self, hint: str) -> str:
        return f"{hint}_{next(self._ids)}"

    def const(self, array, hint: str = "const") -> str:
        array = np.asarray(array)
        key = id(array)
        if key not in self._const_names:
            name = self.fresh(hint)
            self.initializers.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
            self._const_names[key] = name
            self._kept.append(array)
        return self._const_names[key]

    def node(self, op: str, inputs, outputs: int | list[str] = 1, **attrs) -> list[str]:
        names = [self.fresh(op.lower()) for _ in range(outputs)] if isinstance(outputs, int) else outputs
        self.nodes.append(helper.make_node(op, list(inputs), names, **attrs))
        return names

    def one(self, op: str, *inputs, **attrs) -> str:
        return self.node(op, inputs, 1, **attrs)[0]

    def shape_tensor(self, dims) -> str:
        """int64[len(dims)]: ``dims`` with every symbolic entry (``k*B + c``) computed from the batch size."""
        if all(_static(d) for d in dims):
            return self.const(np.array([int(d) for d in dims], np.int64), "shape")
        parts = []
        for d in dims:
            if _static(d):
                parts.append(self.const(np.array([int(d)], np.int64), "dim"))
                continue
            if self.batch_tensor is None or self.batch_symbol is None:
                raise OnnxExportError(f"shape entry {d} needs the batch size, which no input carries")
            factor = d // self.batch_symbol
            offset = d - factor * self.batch_symbol
            if not (_static(factor) and _static(offset)):
                raise OnnxExportError(f"shape entry {d} is not k*B + c in the batch size B")
            part = self.batch_tensor
            if int(factor) != 1:
                part = self.one("Mul", part, self.const(np.array([int(factor)], np.int64), "dim"))
            if int(offset) != 0:
                part = self.one("Add", part, self.const(np.array([int(offset)], np.int64), "dim"))
            parts.append(part)
        return self.one("Concat", *parts, axis=0)


def _shape(var) -> tuple:
    return tuple(var.aval.shape)


def _dtype(var) -> np.dtype:
    return np.dtype(var.aval.dtype)


class _Translator:
    def __init__(self, graph: _Graph):
        self.g = graph

    # -- values ------------------------------------------------------------------------------------------------
    def read(self, env, var):
        if isinstance(var, jax.extend.core.Literal):
            return np.asarray(var.val, dtype=_dtype(var))
        return env[var]

    def name(self, value) -> str:
        return self.g.const(value) if isinstance(value, np.ndarray) else value

    # -- the walk ----------------------------------------------------------------------------------------------
    def run(self, jaxpr, consts, args) -> list:
        env = {}
        for var, value in zip(jaxpr.constvars, consts):
            env[var] = np.asarray(value)
        for var, value in zip(jaxpr.invars, args):
            env[var] = value
        for eqn in jaxpr.eqns:
            values = [self.read(env, v) for v in eqn.invars]
            outs = self.equation(eqn, values)
            for var, value in zip(eqn.outvars, outs):
                env[var] = value
        return [self.read(env, v) for v in jaxpr.outvars]

    def equation(self, eqn, values) -> list:
        prim = eqn.primitive.name
        if prim in _CALLS:
            inner = eqn.params.get(_CALLS[prim])
            if inner is None:
                raise OnnxExportError(f"{prim}: no inner jaxpr under {_CALLS[prim]!r}")
            closed = inner if hasattr(inner, "consts") else None
            jaxpr = closed.jaxpr if closed is not None else inner
            return self.run(jaxpr, closed.consts if closed is not None else (), values)
        static_out = all(all(_static(d) for d in _shape(v)) for v in eqn.outvars)
        if static_out and all(isinstance(v, np.ndarray) for v in values):
            out = eqn.primitive.bind(*values, **eqn.params)
            out = out if eqn.primitive.multiple_results else [out]
            return [np.asarray(o) for o in out]
        handler = getattr(self, f"p_{prim}", None)
        if handler is None:
            if prim in _ELEMENTWISE:
                return [self.g.one(_ELEMENTWISE[prim], *map(self.name, values))]
            if prim in _LOGICAL:
                op = _LOGICAL[prim][0] if _dtype(eqn.invars[0]) == np.bool_ else _LOGICAL[prim][1]
                return [self.g.one(op, *map(self.name, values))]
            if prim in _REDUCTIONS:
                return [self.reduction(eqn, values[0])]
            if prim in _IDENTITY:
                return [self.g.one("Identity", self.name(v)) for v in values]
            raise OnnxExportError(
                f"the ONNX export does not know the JAX primitive {prim!r} (agents/policies/onnx_graph.py)"
            )
        out = handler(eqn, *values)
        return out if isinstance(out, list) else [out]

    # -- primitives ----------------------------------------------------------------------------------------------
    def p_ne(self, eqn, x, y):
        return self.g.one("Not", self.g.one("Equal", self.name(x), self.name(y)))

    def p_rsqrt(self, eqn, x):
        return self.g.one("Reciprocal", self.g.one("Sqrt", self.name(x)))

    def p_square(self, eqn, x):
        return self.g.one("Mul", self.name(x), self.name(x))

    def p_integer_pow(self, eqn, x):
        y = int(eqn.params["y"])
        if y == 2:
            return self.p_square(eqn, x)
        return self.g.one("Pow", self.name(x), self.g.const(np.array(y, _dtype(eqn.invars[0]))))

    def p_log1p(self, eqn, x):
        return self.g.one("Log", self.g.one("Add", self.name(x), self.g.const(np.array(1, _dtype(eqn.invars[0])))))

    def p_round(self, eqn, x):
        if int(eqn.params["rounding_method"]) == 1:  # lax.RoundingMethod.TO_NEAREST_EVEN: ONNX Round's rule
            return self.g.one("Round", self.name(x))
        half = self.g.const(np.array(0.5, _dtype(eqn.invars[0])))
        magnitude = self.g.one("Floor", self.g.one("Add", self.g.one("Abs", self.name(x)), half))
        return self.g.one("Mul", self.g.one("Sign", self.name(x)), magnitude)

    def p_convert_element_type(self, eqn, x):
        target = np.dtype(eqn.params["new_dtype"])
        if target == _dtype(eqn.invars[0]):
            return self.g.one("Identity", self.name(x))
        return self.g.one("Cast", self.name(x), to=_onnx_dtype(target))

    def p_select_n(self, eqn, which, *cases):
        pred = self.name(which)
        if len(cases) == 2:
            if _dtype(eqn.invars[0]) != np.bool_:
                pred = self.g.one("Cast", pred, to=TensorProto.BOOL)
            return self.g.one("Where", pred, self.name(cases[1]), self.name(cases[0]))
        out = self.name(cases[0])
        index_dtype = _dtype(eqn.invars[0])
        for i, case in enumerate(cases[1:], start=1):
            hit = self.g.one("Equal", pred, self.g.const(np.array(i, index_dtype)))
            out = self.g.one("Where", hit, self.name(case), out)
        return out

    def _shift(self, eqn, x, y, direction):
        if _dtype(eqn.invars[0]).kind != "u":
            raise OnnxExportError(f"{eqn.primitive.name} of {_dtype(eqn.invars[0])}: ONNX BitShift takes unsigned ints")
        return self.g.one("BitShift", self.name(x), self.name(y), direction=direction)

    def p_shift_left(self, eqn, x, y):
        return self._shift(eqn, x, y, "LEFT")

    def p_shift_right_logical(self, eqn, x, y):
        return self._shift(eqn, x, y, "RIGHT")

    def p_clamp(self, eqn, lo, x, hi):
        return self.g.one("Min", self.g.one("Max", self.name(x), self.name(lo)), self.name(hi))

    def p_reshape(self, eqn, x, *dynamic):
        if dynamic or eqn.params.get("dimensions") is not None:
            raise OnnxExportError("reshape with dimensions or dynamic shapes is not supported")
        return self.g.one("Reshape", self.name(x), self.g.shape_tensor(eqn.params["new_sizes"]))

    def p_squeeze(self, eqn, x):
        axes = np.array(eqn.params["dimensions"], np.int64)
        return self.g.one("Squeeze", self.name(x), self.g.const(axes, "axes"))

    def p_expand_dims(self, eqn, x):
        axes = np.array(eqn.params["dimensions"], np.int64)
        return self.g.one("Unsqueeze", self.name(x), self.g.const(axes, "axes"))

    def p_broadcast_in_dim(self, eqn, x, *dynamic):
        if dynamic:
            raise OnnxExportError("broadcast_in_dim with a dynamic shape is not supported")
        shape, dims = tuple(eqn.params["shape"]), tuple(eqn.params["broadcast_dimensions"])
        operand = _shape(eqn.invars[0])
        between = [1] * len(shape)
        for i, d in enumerate(dims):
            between[d] = operand[i]
        out = self.name(x)
        if tuple(between) != operand:
            out = self.g.one("Reshape", out, self.g.shape_tensor(between))
        if tuple(between) != shape:
            out = self.g.one("Expand", out, self.g.shape_tensor(shape))
        return out

    def p_concatenate(self, eqn, *xs):
        return self.g.one("Concat", *map(self.name, xs), axis=int(eqn.params["dimension"]))

    def p_transpose(self, eqn, x):
        return self.g.one("Transpose", self.name(x), perm=[int(p) for p in eqn.params["permutation"]])

    def p_slice(self, eqn, x):
        starts, limits = eqn.params["start_indices"], eqn.params["limit_indices"]
        strides = eqn.params["strides"] or (1,) * len(starts)
        shape = _shape(eqn.invars[0])
        axes = [
            i
            for i in range(len(starts))
            if not (_static(starts[i]) and int(starts[i]) == 0 and strides[i] == 1 and limits[i] == shape[i])
        ]
        if not axes:
            return self.g.one("Identity", self.name(x))
        return self.g.one(
            "Slice",
            self.name(x),
            self.g.shape_tensor([starts[a] for a in axes]),
            self.g.shape_tensor([limits[a] for a in axes]),
            self.g.const(np.array(axes, np.int64)),
            self.g.const(np.array([strides[a] for a in axes], np.int64)),
        )

    def p_split(self, eqn, x):
        sizes = eqn.params["sizes"]
        if not all(_static(s) for s in sizes):
            raise OnnxExportError(f"split into symbolic sizes {sizes}")
        return self.g.node(
            "Split", [self.name(x), self.g.const(np.array(sizes, np.int64))], len(sizes), axis=int(eqn.params["axis"])
        )

    def reduction(self, eqn, x):
        prim = eqn.primitive.name
        out = self.name(x)
        boolean = _dtype(eqn.invars[0]) == np.bool_
        if boolean:
            out = self.g.one("Cast", out, to=TensorProto.INT32)
        axes = self.g.const(np.array(eqn.params["axes"], np.int64), "axes")
        out = self.g.one(_REDUCTIONS[prim], out, axes, keepdims=0)
        return self.g.one("Cast", out, to=TensorProto.BOOL) if boolean else out

    def p_argmax(self, eqn, x):
        (axis,) = eqn.params["axes"]
        out = self.g.one("ArgMax", self.name(x), axis=int(axis), keepdims=0)
        return self.g.one("Cast", out, to=_onnx_dtype(eqn.params["index_dtype"]))

    def p_argmin(self, eqn, x):
        (axis,) = eqn.params["axes"]
        out = self.g.one("ArgMin", self.name(x), axis=int(axis), keepdims=0)
        return self.g.one("Cast", out, to=_onnx_dtype(eqn.params["index_dtype"]))

    def p_dot_general(self, eqn, lhs, rhs):
        (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
        ls, rs = _shape(eqn.invars[0]), _shape(eqn.invars[1])
        a, b = self.name(lhs), self.name(rhs)
        if not lb and len(rs) == 2 and tuple(lc) == (len(ls) - 1,) and tuple(rc) == (0,):
            out = self.g.one("MatMul", a, b)
        else:
            letters = iter("abcdefghijklmnopqrstuvwxyz")
            lhs_l = [next(letters) for _ in ls]
            rhs_l = [next(letters) for _ in rs]
            for i, j in zip(lc, rc):
                rhs_l[j] = lhs_l[i]
            for i, j in zip(lb, rb):
                rhs_l[j] = lhs_l[i]
            out_l = (
                [lhs_l[i] for i in lb]
                + [lhs_l[i] for i in range(len(ls)) if i not in lc and i not in lb]
                + [rhs_l[j] for j in range(len(rs)) if j not in rc and j not in rb]
            )
            out = self.g.one("Einsum", a, b, equation=f"{''.join(lhs_l)},{''.join(rhs_l)}->{''.join(out_l)}")
        target = np.dtype(eqn.outvars[0].aval.dtype)
        if target != _dtype(eqn.invars[0]):
            out = self.g.one("Cast", out, to=_onnx_dtype(target))
        return out

    def p_gather(self, eqn, operand, indices):
        dn = eqn.params["dimension_numbers"]
        if dn.operand_batching_dims or dn.start_indices_batching_dims:
            raise OnnxExportError("gather with batching dimensions is not supported")
        slice_sizes = tuple(eqn.params["slice_sizes"])
        shape = _shape(eqn.invars[0])
        index_shape = _shape(eqn.invars[1])
        if isinstance(indices, np.ndarray) and indices.ndim == 1:
            # a static slice (x[..., a:b] and x[..., i] traced with a symbolic batch): one Slice, then the
            # collapsed dimensions squeezed out
            axes = list(dn.start_index_map)
            starts = [int(indices[k]) for k in range(len(axes))]
            ends = [s + int(slice_sizes[a]) for s, a in zip(starts, axes)]
            out = self.g.one(
                "Slice",
                self.name(operand),
                self.g.const(np.array(starts, np.int64)),
                self.g.const(np.array(ends, np.int64)),
                self.g.const(np.array(axes, np.int64)),
            )
            if dn.collapsed_slice_dims:
                out = self.g.one("Squeeze", out, self.g.const(np.array(dn.collapsed_slice_dims, np.int64)))
            return out
        lookup = (
            tuple(dn.start_index_map) == (0,)
            and tuple(dn.collapsed_slice_dims) == (0,)
            and slice_sizes[0] == 1
            and all(slice_sizes[i] == shape[i] for i in range(1, len(shape)))
            and index_shape[-1] == 1
            and tuple(dn.offset_dims) == tuple(range(len(index_shape) - 1, len(index_shape) + len(shape) - 2))
        )
        if lookup:
            # a table lookup (lut[ids], params[ids]): rows of the operand, the ids' dimensions in front: ONNX Gather
            ids = self.g.one("Squeeze", self.name(indices), self.g.const(np.array([-1], np.int64)))
            return self.g.one("Gather", self.name(operand), self.g.one("Cast", ids, to=TensorProto.INT64), axis=0)
        raise OnnxExportError(
            f"gather {dn} with slice sizes {slice_sizes} is not one the ONNX export knows "
            "(a static slice or a table lookup)"
        )

    def p_conv_general_dilated(self, eqn, lhs, rhs):
        p = eqn.params
        if any(d != 1 for d in p["lhs_dilation"]) or p["batch_group_count"] != 1:
            raise OnnxExportError("conv_general_dilated with input dilation or batch groups is not supported")
        lhs_spec, rhs_spec, out_spec = p["dimension_numbers"]
        x = self.g.one("Transpose", self.name(lhs), perm=list(lhs_spec))  # to N, C, spatial...
        w = self.g.one("Transpose", self.name(rhs), perm=list(rhs_spec))  # to O, I, spatial...
        pads = [int(lo) for lo, _ in p["padding"]] + [int(hi) for _, hi in p["padding"]]
        y = self.g.one(
            "Conv",
            x,
            w,
            strides=[int(s) for s in p["window_strides"]],
            pads=pads,
            dilations=[int(d) for d in p["rhs_dilation"]],
            group=int(p["feature_group_count"]),
        )
        inverse = [0] * len(out_spec)
        for i, d in enumerate(out_spec):
            inverse[d] = i
        return self.g.one("Transpose", y, perm=inverse)


def to_onnx(
    closed_jaxpr, input_names, output_names, batch_symbol=None, doc: str = "", metadata: dict | None = None
) -> onnx.ModelProto:
    """The ONNX model of ``closed_jaxpr`` (``jax.make_jaxpr(f)(*specs)``), its inputs and outputs named as given.
    ``batch_symbol``: the symbolic dimension the inputs were traced with (it becomes the dimension ``"B"`` of the
    file's inputs and outputs). Checked with ``onnx.checker``; raises ``OnnxExportError`` for what it cannot write."""
    jaxpr = closed_jaxpr.jaxpr
    if len(input_names) != len(jaxpr.invars) or len(output_names) != len(jaxpr.outvars):
        raise OnnxExportError(
            f"{len(jaxpr.invars)} inputs and {len(jaxpr.outvars)} outputs traced; names given "
            f"for {len(input_names)} and {len(output_names)}"
        )
    graph = _Graph(batch_symbol)

    def value_info(name, var):
        dims = ["B" if not _static(d) else int(d) for d in _shape(var)]
        return helper.make_tensor_value_info(name, _onnx_dtype(_dtype(var)), dims)

    for name, var in zip(input_names, jaxpr.invars):
        for axis, d in enumerate(_shape(var)):
            if graph.batch_tensor is None and batch_symbol is not None and not _static(d) and d == batch_symbol:
                graph.batch_tensor = graph.node(
                    "Shape", [name], [graph.fresh(f"{name}_batch")], start=axis, end=axis + 1
                )[0]
    outs = _Translator(graph).run(jaxpr, closed_jaxpr.consts, list(input_names))
    for name, value in zip(output_names, outs):
        graph.node("Identity", [graph.const(value) if isinstance(value, np.ndarray) else value], [name])
    onnx_graph = helper.make_graph(
        graph.nodes,
        "policy",
        [value_info(n, v) for n, v in zip(input_names, jaxpr.invars)],
        [value_info(n, v) for n, v in zip(output_names, jaxpr.outvars)],
        initializer=graph.initializers,
        doc_string=doc,
    )
    model = helper.make_model(
        onnx_graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="jaxgame", ir_version=IR_VERSION
    )
    for key, value in (metadata or {}).items():
        model.metadata_props.add(key=str(key), value=str(value))
    onnx.checker.check_model(model)
    return model


__all__ = ["IR_VERSION", "OPSET", "OnnxExportError", "to_onnx"]
