"""Model loaders: turn ``.nnet`` files, ONNX models, ``torch.nn`` modules and scikit-learn MLPs
into a :class:`~polytrav.Network`.

Each loader lives in its own module (:mod:`polytrav.model.loaders.nnet`, :mod:`polytrav.model.loaders.onnx`,
:mod:`polytrav.model.loaders.torch`, :mod:`polytrav.model.loaders.sklearn`) and imports its
optional dependency only when called.
"""
