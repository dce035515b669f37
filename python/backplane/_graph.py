"""Events and graphs: bp_event_* and bp_stream_begin_capture / bp_graph_*.

An Event marks a point in a stream's work: other streams can wait for it,
the host can wait for it, and two of them time the work between. A Graph is
the ops issued on a stream between begin_capture and end_capture, recorded
once and launched many times (natively, as a command buffer or CUDA graph,
where the backend has them); rebind points it at other tensors' buffers.
"""
from __future__ import annotations

import contextlib
import ctypes
from typing import Any, Iterator, Optional

from . import _lib
from ._checks import _check, _invalid

_P, _PP = ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p)
_SIGNATURES = {
    "bp_event_create": ([_P, _PP], ctypes.c_int),
    "bp_event_destroy": ([_P], None),
    "bp_event_record": ([_P, _P], ctypes.c_int),
    "bp_stream_wait_event": ([_P, _P], ctypes.c_int),
    "bp_event_synchronize": ([_P], ctypes.c_int),
    "bp_event_elapsed_ms": ([_P, _P, ctypes.POINTER(ctypes.c_double)], ctypes.c_int),
    "bp_stream_begin_capture": ([_P], ctypes.c_int),
    "bp_stream_end_capture": ([_P, _PP], ctypes.c_int),
    "bp_graph_launch": ([_P, _P], ctypes.c_int),
    "bp_graph_rebind": ([_P, _P, _P], ctypes.c_int),
    "bp_graph_size": ([_P], ctypes.c_uint32),
    "bp_graph_is_native": ([_P], ctypes.c_bool),
    "bp_graph_destroy": ([_P], None),
}
for _name, (_args, _res) in _SIGNATURES.items():
    _fn = getattr(_lib.lib, _name)
    _fn.argtypes, _fn.restype = _args, _res


class Event:
    """A point in a stream's work (bp_event_t), recorded with Stream.record_event."""

    def __init__(self, device: Any) -> None:
        self.device, self._h = device, ctypes.c_void_p()
        _check(_lib.lib.bp_event_create(device._h, ctypes.byref(self._h)))

    def record(self, stream: Any) -> "Event":
        """Marks the end of the work queued on stream so far; returns self."""
        _check(_lib.lib.bp_event_record(self._h, stream._h))
        return self

    def synchronize(self) -> None:
        """Waits on the host until the recorded work is done."""
        _check(_lib.lib.bp_event_synchronize(self._h))

    def elapsed_ms(self, end: "Event") -> float:
        """Milliseconds of device time from this event to end (both recorded and done)."""
        ms = ctypes.c_double()
        _check(_lib.lib.bp_event_elapsed_ms(self._h, end._h, ctypes.byref(ms)))
        return ms.value

    def close(self) -> None:
        """Destroys the event (idempotent; bp_device_close has already freed it
        when its device is closed)."""
        if self._h and self.device._h:
            _lib.lib.bp_event_destroy(self._h)
        self._h = None

    def __del__(self):
        if getattr(self, "_h", None):
            self.close()


class Graph:
    """Recorded ops (bp_graph_t): launch() runs them again, in order, on a stream."""

    def __init__(self, stream: Any, handle: ctypes.c_void_p) -> None:
        self.stream, self._h = stream, handle

    def launch(self, stream: Optional[Any] = None) -> None:
        """Queues the recorded ops on stream (by default the one they were captured on)."""
        _check(_lib.lib.bp_graph_launch(self._h, (stream or self.stream)._h))

    def rebind(self, old: Any, new: Any) -> None:
        """Points every recorded use of old's buffer at new's (same device, at
        least as large): the graph then reads and writes new. Views are rebound
        through their buffers, so give the tensors that own them."""
        if old._buffer is None or new._buffer is None:
            raise _invalid("rebind", "a tensor has been closed")
        _check(_lib.lib.bp_graph_rebind(self._h, old._buffer, new._buffer))

    def __len__(self) -> int:
        """The number of recorded ops."""
        return int(_lib.lib.bp_graph_size(self._h))

    @property
    def is_native(self) -> bool:
        """Whether the last launch ran the backend's native graph rather than
        replaying the ops one by one."""
        return bool(_lib.lib.bp_graph_is_native(self._h))

    def close(self) -> None:
        """Destroys the graph (waits for launches in flight; idempotent)."""
        if self._h:
            _lib.lib.bp_graph_destroy(self._h)
        self._h = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        if getattr(self, "_h", None):
            self.close()


class _Capture:
    """What Stream.capture() yields: .graph is set when the block ends."""

    graph: Optional[Graph] = None


class StreamGraphMixin:
    """Stream methods for events and graphs (mixed into Stream)."""

    def record_event(self, event: Optional[Event] = None) -> Event:
        """Records event (a new one when None) at this point of the stream; returns it."""
        return (event or Event(self.device)).record(self)

    def wait_event(self, event: Event) -> None:
        """Makes work queued on this stream from now on wait for event."""
        _check(_lib.lib.bp_stream_wait_event(self._h, event._h))

    def begin_capture(self) -> None:
        """Starts recording: ops issued on this stream are checked and recorded, not run."""
        _check(_lib.lib.bp_stream_begin_capture(self._h))

    def end_capture(self) -> Graph:
        """Stops recording and returns the Graph."""
        h = ctypes.c_void_p()
        _check(_lib.lib.bp_stream_end_capture(self._h, ctypes.byref(h)))
        return Graph(self, h)

    @contextlib.contextmanager
    def capture(self) -> Iterator[_Capture]:
        """`with s.capture() as cap: ...ops on s...` records them into cap.graph.
        If the block raises, the capture is ended and its graph discarded."""
        cap = _Capture()
        self.begin_capture()
        try:
            yield cap
        except BaseException:
            self.end_capture().close()
            raise
        cap.graph = self.end_capture()
