"""The bridge from the C library's log (bp_log_set_handler) to Python's logging.

Opt-in: backplane.log_to_python() sends every line the library and its
plugins log to the logger "backplane" (levels mapped: error -> ERROR,
warn -> WARNING, info -> INFO, debug -> DEBUG); backplane.log_to_stderr()
restores the library's own stderr output.
"""
from __future__ import annotations

import atexit
import ctypes
import logging
from typing import Optional

from . import _lib

logger = logging.getLogger("backplane")

_C_TO_PY = {0: logging.ERROR, 1: logging.WARNING, 2: logging.INFO, 3: logging.DEBUG}

_HANDLER_T = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_void_p)

_lib.lib.bp_log_set_handler.argtypes = [_HANDLER_T, ctypes.c_void_p]
_lib.lib.bp_log_set_handler.restype = None
_lib.lib.bp_log_set_level.argtypes = [ctypes.c_int]
_lib.lib.bp_log_set_level.restype = None
_lib.lib.bp_log_get_level.argtypes = []
_lib.lib.bp_log_get_level.restype = ctypes.c_int


def _on_line(level: int, category: Optional[bytes], message: Optional[bytes], _user: int) -> None:
    try:
        cat = category.decode("utf-8", "replace") if category else "?"
        text = message.decode("utf-8", "replace") if message else ""
        logger.log(_C_TO_PY.get(level, logging.DEBUG), "[%s] %s", cat, text,
                   extra={"backplane_category": cat})
    except Exception:  # never let an exception cross into C
        pass


_callback = _HANDLER_T(_on_line)  # kept alive for as long as the module
_installed = False


def _c_level(py_level: int) -> int:
    if py_level <= logging.DEBUG:
        return 3
    if py_level <= logging.INFO:
        return 2
    if py_level <= logging.WARNING:
        return 1
    return 0


def log_to_python(level: Optional[int] = None) -> None:
    """Route the library's log lines to the logger "backplane".

    level (a logging level such as logging.DEBUG) also sets the library's
    filter to match (bp_log_set_level) and the logger's level; None keeps
    the filter that BACKPLANE_DEBUG chose (default: warnings and errors).
    Lines from any thread arrive as log records with the extra attribute
    backplane_category ("loader", "api", "memory", "plugin NAME")."""
    global _installed
    if level is not None:
        logger.setLevel(level)
        _lib.lib.bp_log_set_level(_c_level(level))
    _lib.lib.bp_log_set_handler(_callback, None)
    _installed = True


def log_to_stderr() -> None:
    """Send the library's log lines to stderr again (the default)."""
    global _installed
    _lib.lib.bp_log_set_handler(_HANDLER_T(), None)
    _installed = False


def set_log_level(level: int) -> None:
    """Set the library's filter from a logging level (DEBUG, INFO, WARNING, ERROR)."""
    _lib.lib.bp_log_set_level(_c_level(level))


@atexit.register
def _restore() -> None:
    if _installed:
        log_to_stderr()
