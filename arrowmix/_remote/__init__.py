"""Remote chunk files read through a bounded local cache (private).

``meta`` reads a remote chunk's footer and version by range requests, ``retry`` is the one
retry layer of those requests, ``stats`` counts and sizes, ``download`` fills and checks one
local copy, ``cache`` keeps the node's bounded cache of local copies, and ``table`` serves rows of
remote chunks through it. This room imports only :mod:`arrowmix._storage` and
:mod:`arrowmix.exceptions`.
"""
