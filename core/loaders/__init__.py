"""Model loaders: turn ``.nnet`` files, ONNX models and ``torch.nn`` modules into a
:class:`~polytrav.Network`.

Each loader lives in its own module (:mod:`polytrav.loaders.nnet`, :mod:`polytrav.loaders.onnx`,
:mod:`polytrav.loaders.torch`) and imports its optional dependency only when called.
"""
