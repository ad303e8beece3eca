"""Model loaders: turn ``.nnet`` files, ONNX models and ``torch.nn`` modules into a
:class:`~polytrav.Network`.

Each loader lives in its own module (:mod:`polytrav.model.loaders.nnet`, :mod:`polytrav.model.loaders.onnx`,
:mod:`polytrav.model.loaders.torch`) and imports its optional dependency only when called.
"""
