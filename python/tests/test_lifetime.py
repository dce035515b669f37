"""Lifetimes: a collected tensor frees its buffer; devices and streams are
context managers; closing a device first leaves nothing to free twice."""
import gc

import backplane as bp


def test_collected_tensors_free_their_buffers():
    with bp.Context() as ctx:
        dev = ctx.open("cpu")
        before = dev.memory_stats()["in_use_bytes"]
        for _ in range(50):
            t = dev.empty((1024, 1024))
            del t
        gc.collect()
        assert dev.memory_stats()["in_use_bytes"] <= before + 4096
        ts = [dev.empty((256, 256)) for _ in range(4)]
        assert dev.memory_stats()["in_use_bytes"] >= before + 4 * 256 * 256 * 4
        del ts
        gc.collect()
        assert dev.memory_stats()["in_use_bytes"] <= before + 4096


def test_view_keeps_its_base_alive():
    with bp.Context() as ctx:
        dev = ctx.open("cpu")
        v = dev.tensor(__import__("numpy").arange(6, dtype="float32").reshape(2, 3)).T
        gc.collect()
        assert v.numpy().tolist() == [[0, 3], [1, 4], [2, 5]]


def test_device_and_stream_are_context_managers():
    ctx = bp.Context()
    with ctx.open("cpu") as dev:
        t = dev.empty((4,))
        with dev.stream() as s:
            s.fill(t, 2.0)
            s.synchronize()
        assert s._h is None
        assert t.numpy().tolist() == [2.0] * 4
    assert dev._h is None
    del t  # the device is closed first: freeing after close is harmless
    gc.collect()
    dev.close()  # idempotent
    ctx.close()
