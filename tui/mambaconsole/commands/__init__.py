"""Commands of the ``mambaconsole`` CLI, one module each (``add_arguments`` + ``run``)."""
