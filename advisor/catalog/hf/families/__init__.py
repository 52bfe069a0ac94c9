"""One module per model family (or group of close families), each stating only what differs:
its keys, its transformers defaults and its special layers. The shared steps are in
:mod:`advisor.catalog.hf.mapper`; :mod:`advisor.catalog.hf.registry` lists the families."""
