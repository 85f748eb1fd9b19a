"""pyautogui on a 0..N grid, for the agent's bash commands only (HybridCUA's coordinate space).

HybridCUA's agents write ``python3 <<'PY' ... pyautogui.click(500, 300) ... PY`` with the
screen treated as 1000x1000: a coordinate v on the grid 0..999 is pixel
``round(v * W / 999)`` (H for y). The env's bash channel, asked for it per call
(``bash``'s ``pyautogui_grid`` argument), runs the command with
``OSWORLD_PYAUTOGUI_GRID`` set, and the desktop's ``python``/``python3`` wrappers
(``guest/bin``) then put this directory first on ``PYTHONPATH``. Nothing else sees it:
the env's own pyautogui actions, setup steps and getters run without the variable, and
this file lives in the guest's read-only code, so the desktop user cannot change what
it does for anyone but their own processes (no ``usercustomize.py`` in the user's home;
the desktop sets ``PYTHONNOUSERSITE``).

When pyautogui is imported, its absolute-position functions are wrapped: an x, y (or an
``(x, y)`` pair as the first argument) given as numbers is scaled to the real screen
(``pyautogui.size()``); ``None`` (the current position) and image names are left alone,
relative moves (``moveRel``, ``dragRel``) are not positions and stay as given. pyautogui's
functions call each other (``doubleClick`` calls ``click`` with pixels already scaled),
so only the outermost wrapped call scales.
"""

from __future__ import annotations

import functools
import importlib.abc
import importlib.machinery
import os
import sys
import threading

GRID_ENV = "OSWORLD_PYAUTOGUI_GRID"

# pyautogui function -> index of its x among the positional arguments.
POSITION_FUNCTIONS = {
    "click": 0,
    "leftClick": 0,
    "rightClick": 0,
    "middleClick": 0,
    "doubleClick": 0,
    "tripleClick": 0,
    "moveTo": 0,
    "dragTo": 0,
    "mouseDown": 0,
    "mouseUp": 0,
    "scroll": 1,
    "hscroll": 1,
    "vscroll": 1,
}

_depth = threading.local()


def _number(value):
    return isinstance(value, int | float) and not isinstance(value, bool)


def _scale(value, extent, grid):
    return round(value * extent / grid)


def _scaled_position(x, y, size, grid):
    width, height = size
    if isinstance(x, list | tuple) and len(x) == 2 and all(_number(v) for v in x) and y is None:
        return (_scale(x[0], width, grid), _scale(x[1], height, grid)), None
    return (
        _scale(x, width, grid) if _number(x) else x,
        _scale(y, height, grid) if _number(y) else y,
    )


def _wrap(module, name, offset, grid):
    original = getattr(module, name)

    @functools.wraps(original)
    def on_grid(*args, **kwargs):
        if getattr(_depth, "value", 0):
            return original(*args, **kwargs)
        args = list(args)
        x = args[offset] if len(args) > offset else kwargs.get("x")
        y = args[offset + 1] if len(args) > offset + 1 else kwargs.get("y")
        x, y = _scaled_position(x, y, tuple(module.size()), grid)
        for index, key, value in ((offset, "x", x), (offset + 1, "y", y)):
            if len(args) > index:
                args[index] = value
            elif key in kwargs:
                kwargs[key] = value
        _depth.value = 1
        try:
            return original(*args, **kwargs)
        finally:
            _depth.value = 0

    setattr(module, name, on_grid)


class _Loader(importlib.abc.Loader):
    def __init__(self, inner, grid):
        self.inner, self.grid = inner, grid

    def create_module(self, spec):
        return self.inner.create_module(spec)

    def exec_module(self, module):
        self.inner.exec_module(module)
        for name, offset in POSITION_FUNCTIONS.items():
            if callable(getattr(module, name, None)):
                _wrap(module, name, offset, self.grid)


class _Finder(importlib.abc.MetaPathFinder):
    def __init__(self, grid):
        self.grid = grid

    def find_spec(self, fullname, path, target=None):
        if fullname != "pyautogui":
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None:
            return spec
        spec.loader = _Loader(spec.loader, self.grid)
        return spec


def _install():
    try:
        grid = int(os.environ.get(GRID_ENV, ""))
    except ValueError:
        return
    if grid >= 1:
        sys.meta_path.insert(0, _Finder(grid))


_install()
