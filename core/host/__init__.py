"""Layer 5, the host: ``analyze`` (``runner``), the plugin manager, the hookspecs, the
``Analysis`` base class and the readable text of reports (``summary``)."""
