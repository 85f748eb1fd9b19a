"""The in-desktop control server: OSWorld's guest HTTP contract plus raw frames and GUI input.

It runs inside the desktop (sandbox or VM) on Debian's Python, where ``uno`` and
``pyatspi`` import. Nothing in this package may import host-side modules
(``env``, ``backends``): a VM image carries it alone.
"""
