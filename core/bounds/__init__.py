"""Layer 3, sound bounds: CROWN / alpha-CROWN (``crown``), Lagrangian cell bounds
(``lagrange``), the certified box LP (``box_lp``), neuron branch and bound
(``branch_and_bound``) and input splitting (``split``)."""
