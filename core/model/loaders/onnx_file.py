"""ONNX files read with protobuf alone: the part of ONNX's format that polytrav reads.

An ONNX file is a protobuf message, ``ModelProto``, whose schema is ONNX's ``onnx.proto``
(proto2). This module declares the messages and fields that the loaders read, with the field
numbers of that schema, and lets protobuf parse the file; fields it does not declare are kept
as unknown fields (so a message read here and written again loses nothing).

Why not the ``onnx`` package: ``import onnx`` loads ``ml_dtypes``, whose 0.7.0 release takes
0.6-0.7 s to import against 0.01 s for 0.6.0 (it registers far more NumPy ufunc loops, and
NumPy adds each in time linear in those already there); protobuf takes 0.02 s, and a verifier's
answer often takes less than a second. Reading the format directly keeps every command's
start-up free of whatever ``onnx`` imports next (``benchmarks/startup.py`` measures both).
"""
from __future__ import annotations

import os
from functools import lru_cache
from os import PathLike
from pathlib import Path

import numpy as np

from polytrav.vocabulary.errors import NetworkError

__all__ = ["read_model", "to_array", "attribute_value", "type_name", "numpy_type",
           "message_class"]

#: ONNX's element types (``TensorProto.DataType``), by number.
TYPE_NAMES = {0: "UNDEFINED", 1: "FLOAT", 2: "UINT8", 3: "INT8", 4: "UINT16", 5: "INT16",
              6: "INT32", 7: "INT64", 8: "STRING", 9: "BOOL", 10: "FLOAT16", 11: "DOUBLE",
              12: "UINT32", 13: "UINT64", 14: "COMPLEX64", 15: "COMPLEX128", 16: "BFLOAT16",
              17: "FLOAT8E4M3FN", 18: "FLOAT8E4M3FNUZ", 19: "FLOAT8E5M2", 20: "FLOAT8E5M2FNUZ",
              21: "UINT4", 22: "INT4", 23: "FLOAT4E2M1", 24: "FLOAT8E8M0", 25: "UINT2",
              26: "INT2", 27: "FLOAT6E2M3", 28: "FLOAT6E3M2"}
#: The element types NumPy holds, little-endian as ONNX stores them, and the typed field that
#: holds their values when ``raw_data`` does not (``int32_data`` holds every type of 32 bits
#: or fewer, FLOAT16 and BFLOAT16 as their bit patterns).
_NUMPY = {1: ("<f4", "float_data"), 2: ("u1", "int32_data"), 3: ("i1", "int32_data"),
          4: ("<u2", "int32_data"), 5: ("<i2", "int32_data"), 6: ("<i4", "int32_data"),
          7: ("<i8", "int64_data"), 9: ("?", "int32_data"), 10: ("<f2", "int32_data"),
          11: ("<f8", "double_data"), 12: ("<u4", "uint64_data"), 13: ("<u8", "uint64_data")}
_BFLOAT16 = 16
_EXTERNAL = 1  # TensorProto.DataLocation.EXTERNAL

# The schema: per message, its fields as (name, number, kind, repeated); a kind is a scalar
# type of descriptor.proto's FieldDescriptorProto.Type or a message of this file.
_O, _R = False, True
_SCHEMA = {
    "ModelProto": [("ir_version", 1, "int64", _O), ("opset_import", 8, "OperatorSetIdProto", _R),
                   ("producer_name", 2, "string", _O), ("producer_version", 3, "string", _O),
                   ("domain", 4, "string", _O), ("model_version", 5, "int64", _O),
                   ("doc_string", 6, "string", _O), ("graph", 7, "GraphProto", _O),
                   ("metadata_props", 14, "StringStringEntryProto", _R)],
    "OperatorSetIdProto": [("domain", 1, "string", _O), ("version", 2, "int64", _O)],
    "StringStringEntryProto": [("key", 1, "string", _O), ("value", 2, "string", _O)],
    "GraphProto": [("node", 1, "NodeProto", _R), ("name", 2, "string", _O),
                   ("initializer", 5, "TensorProto", _R), ("doc_string", 10, "string", _O),
                   ("input", 11, "ValueInfoProto", _R), ("output", 12, "ValueInfoProto", _R),
                   ("value_info", 13, "ValueInfoProto", _R)],
    "NodeProto": [("input", 1, "string", _R), ("output", 2, "string", _R),
                  ("name", 3, "string", _O), ("op_type", 4, "string", _O),
                  ("domain", 7, "string", _O), ("attribute", 5, "AttributeProto", _R),
                  ("doc_string", 6, "string", _O)],
    "AttributeProto": [("name", 1, "string", _O), ("ref_attr_name", 21, "string", _O),
                       ("doc_string", 13, "string", _O), ("type", 20, "int32", _O),
                       ("f", 2, "float", _O), ("i", 3, "int64", _O), ("s", 4, "bytes", _O),
                       ("t", 5, "TensorProto", _O), ("g", 6, "GraphProto", _O),
                       ("floats", 7, "float", _R), ("ints", 8, "int64", _R),
                       ("strings", 9, "bytes", _R), ("tensors", 10, "TensorProto", _R),
                       ("graphs", 11, "GraphProto", _R)],
    "TensorProto": [("dims", 1, "int64", _R), ("data_type", 2, "int32", _O),
                    ("float_data", 4, "float", _R), ("int32_data", 5, "int32", _R),
                    ("string_data", 6, "bytes", _R), ("int64_data", 7, "int64", _R),
                    ("name", 8, "string", _O), ("doc_string", 12, "string", _O),
                    ("raw_data", 9, "bytes", _O),
                    ("external_data", 13, "StringStringEntryProto", _R),
                    ("data_location", 14, "int32", _O), ("double_data", 10, "double", _R),
                    ("uint64_data", 11, "uint64", _R)],
    "ValueInfoProto": [("name", 1, "string", _O), ("type", 2, "TypeProto", _O),
                       ("doc_string", 3, "string", _O)],
    "TypeProto": [("tensor_type", 1, "TensorType", _O), ("denotation", 6, "string", _O)],
    "TensorType": [("elem_type", 1, "int32", _O), ("shape", 2, "TensorShapeProto", _O)],
    "TensorShapeProto": [("dim", 1, "Dimension", _R)],
    "Dimension": [("dim_value", 1, "int64", _O), ("dim_param", 2, "string", _O),
                  ("denotation", 3, "string", _O)],
}
#: ONNX declares these repeated numbers packed (what a message written again uses).
_PACKED = {("TensorProto", n) for n in ("float_data", "int32_data", "int64_data",
                                         "double_data", "uint64_data")}
#: Nested in ONNX's schema: TypeProto.Tensor and TensorShapeProto.Dimension (the names a
#: message's full name has; the wire format knows only numbers).
_NESTED = {"TensorType": ("TypeProto", "Tensor"), "Dimension": ("TensorShapeProto", "Dimension")}


@lru_cache(maxsize=None)
def _classes() -> dict:
    try:
        from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
    except ImportError as exc:
        raise ImportError('reading ONNX files needs the protobuf package; install it with '
                          'pip install "polytrav[onnx]"') from exc

    field = descriptor_pb2.FieldDescriptorProto
    file = descriptor_pb2.FileDescriptorProto(name="polytrav/onnx_subset.proto",
                                              package="onnx", syntax="proto2")
    messages = {}
    for name in _SCHEMA:
        parent, own = _NESTED.get(name, (None, name))
        messages[name] = (messages[parent].nested_type.add(name=own) if parent
                          else file.message_type.add(name=own))
    for name, fields in _SCHEMA.items():
        for fname, number, kind, repeated in fields:
            f = messages[name].field.add(
                name=fname, number=number,
                label=field.LABEL_REPEATED if repeated else field.LABEL_OPTIONAL)
            if kind in _SCHEMA:
                f.type = field.TYPE_MESSAGE
                f.type_name = ".onnx." + ".".join(x for x in _NESTED.get(kind, (kind,)))
            else:
                f.type = getattr(field, "TYPE_" + kind.upper())
            if (name, fname) in _PACKED:
                f.options.packed = True
    # a pool of its own: the ``onnx`` package, if imported, holds ONNX's full schema in the
    # default one under the same names
    classes = message_factory.GetMessages([file], pool=descriptor_pool.DescriptorPool())
    out = {name: classes["onnx." + name] for name in _SCHEMA if name not in _NESTED}
    out.update({name: getattr(out[parent], own) for name, (parent, own) in _NESTED.items()})
    return out


def message_class(name: str):
    """The protobuf class of ONNX message ``name`` (``"ModelProto"``, ``"ValueInfoProto"``...)."""
    return _classes()[name]


def read_model(path: str | PathLike, *, external_data: bool = True):
    """The ``ModelProto`` of an ONNX file, with every external tensor's data read into it
    (``external_data=False``: left where it is, for readers of the graph alone).

    Raises
    ------
    NetworkError
        If the file is empty, does not parse as ONNX, or names external data that cannot be
        read; an ``OSError`` reading the file itself passes.
    """
    path = Path(path)
    label = f"ONNX model '{path.name}'"
    data = path.read_bytes()
    if not data:
        raise NetworkError(f"{label}: the file is empty (0 bytes); give the model file itself "
                           "(an interrupted download or copy leaves an empty file)")
    model = message_class("ModelProto")()
    try:
        model.ParseFromString(data)
    except Exception as exc:  # protobuf's DecodeError, and what its C parser raises
        raise NetworkError(f"{label}: cannot parse the file as ONNX; {_not_onnx(data)}") from exc
    if external_data:
        for tensor in _tensors(model.graph):
            if tensor.data_location == _EXTERNAL:
                _read_external(tensor, path.parent, label)
    return model


def _tensors(graph):
    """The tensors of a graph that may hold external data: initializers and node attributes."""
    yield from graph.initializer
    for node in graph.node:
        for a in node.attribute:
            if a.HasField("t"):
                yield a.t
            yield from a.tensors


def _read_external(tensor, folder: Path, label: str) -> None:
    """Move a tensor's external data into ``raw_data``, as ONNX's loader does (the location
    is a path relative to the model's folder, and may not leave it)."""
    where = {e.key: e.value for e in tensor.external_data}
    location = where.get("location", "")
    file = (folder / location).resolve()
    if not location or os.path.isabs(location) or folder.resolve() not in file.parents:
        raise NetworkError(f"{label}: tensor {tensor.name!r} keeps its data in "
                           f"{location!r}, not a file inside the model's folder")
    try:
        with open(file, "rb") as fh:
            fh.seek(int(where.get("offset", 0)))
            length = int(where["length"]) if "length" in where else -1
            tensor.raw_data = fh.read(length)
    except (OSError, ValueError) as exc:
        raise NetworkError(f"{label}: cannot read tensor {tensor.name!r}'s external data from "
                           f"{location!r} ({exc}); keep the data file beside the model") from exc
    del tensor.external_data[:]
    tensor.data_location = 0


def _not_onnx(head: bytes) -> str:
    """What a file that does not parse as ONNX may be instead."""
    try:
        text = head[:4096].decode("utf-8")
    except UnicodeDecodeError:
        return "it is truncated, corrupt, or not an ONNX model: give the model file itself"
    if text.lstrip().startswith(("(", ";")):
        return "it is text that looks like VNN-LIB: give the network's .onnx file here"
    return ("it is a text file, not an ONNX model (a .nnet network must be named .nnet): "
            "give the model file itself")


def type_name(elem_type: int) -> str:
    """ONNX's name of an element type (``"FLOAT"``, ``"INT64"``...)."""
    return TYPE_NAMES.get(elem_type, f"type {elem_type}")


def numpy_type(elem_type: int) -> np.dtype:
    """The NumPy type of an ONNX element type (a Cast's ``to``); BFLOAT16 needs ``ml_dtypes``
    (loaded only here)."""
    if elem_type in _NUMPY:
        return np.dtype(_NUMPY[elem_type][0])
    if elem_type == _BFLOAT16:
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    raise ValueError(f"element type {type_name(elem_type)} has no NumPy type")


def to_array(tensor) -> np.ndarray:
    """A ``TensorProto``'s value as a NumPy array of its own type (BFLOAT16 widened exactly
    to float32)."""
    kind = tensor.data_type
    shape = tuple(tensor.dims)
    if tensor.data_location == _EXTERNAL:
        raise ValueError(f"tensor {tensor.name!r} keeps its data in an external file")
    if kind == _BFLOAT16:  # the top half of a float32
        bits = (np.frombuffer(tensor.raw_data, "<u2") if tensor.HasField("raw_data")
                else np.asarray(tensor.int32_data, np.uint32))
        return (bits.astype(np.uint32) << 16).view(np.float32).reshape(shape)
    if kind not in _NUMPY:
        raise ValueError(f"tensor {tensor.name!r} holds {type_name(kind)} values, which "
                         "polytrav does not read")
    dtype, typed = _NUMPY[kind]
    if tensor.HasField("raw_data"):
        values = np.frombuffer(tensor.raw_data, dtype)
    elif kind == 10:  # FLOAT16 as bit patterns
        values = np.asarray(tensor.int32_data, np.uint16).view(np.float16)
    else:
        values = np.asarray(getattr(tensor, typed)).astype(dtype)
    return values.astype(values.dtype.newbyteorder("=")).reshape(shape)


def attribute_value(attr):
    """An ``AttributeProto``'s value, by its declared type: a number, bytes, a tensor (as a
    NumPy array), a graph, or a list of one of these."""
    if attr.ref_attr_name:
        raise ValueError(f"attribute {attr.name!r} refers to a function's attribute "
                         f"{attr.ref_attr_name!r}")
    kinds = {1: "f", 2: "i", 3: "s", 4: "t", 5: "g", 6: "floats", 7: "ints", 8: "strings",
             9: "tensors", 10: "graphs"}
    if attr.type not in kinds:
        raise ValueError(f"attribute {attr.name!r} has a type (number {attr.type}) polytrav "
                         "does not read")
    value = getattr(attr, kinds[attr.type])
    if attr.type == 4:
        return to_array(value)
    if attr.type == 9:
        return [to_array(t) for t in value]
    return list(value) if attr.type >= 6 else value
