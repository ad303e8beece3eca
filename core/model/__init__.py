"""Layer 1, the model: the network (``Network``), input regions, polytopes, the normalised
frame of a region (``geometry``) and the loaders of model files (``loaders``)."""
