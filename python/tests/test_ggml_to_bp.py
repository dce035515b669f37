"""tools/ggml_to_bp.py on a GGUF file written here: a Q4_0 weight whose
blocks come from NumPy by ggml's reference rounding, converted, loaded as a
backplane q4_0 tensor and used by qmatmul on cpu-ref; the bytes equal what
bp_quantize writes from the same f32 values."""
import importlib.util
import json
import os
import struct

import numpy as np

import backplane as bp

_HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location("ggml_to_bp", os.path.join(_HERE, "../../tools/ggml_to_bp.py"))
ggml_to_bp = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ggml_to_bp)


def _q4_0(x):
    """ggml's quantize_row_q4_0_ref in NumPy f32."""
    out = bytearray()
    for blk in x.reshape(-1, 32):
        i = int(np.argmax(np.abs(blk)))
        d = np.float32(blk[i]) / np.float32(-8)
        inv = np.float32(1) / d if d != 0 else np.float32(0)
        q = np.minimum(15, ((blk * inv) + np.float32(8.5)).astype(np.int8)).astype(np.uint8)
        out += np.float16(d).tobytes() + bytes((q[:16] | (q[16:] << 4)).astype(np.uint8))
    return bytes(out)


def _gguf(tensors):
    def s(v):
        return struct.pack("<Q", len(v)) + v.encode()
    head = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), 1) + s("general.alignment") + struct.pack("<II", 4, 32)
    data, infos = b"", b""
    for name, ne, gtype, blob in tensors:
        infos += s(name) + struct.pack("<I", len(ne)) + struct.pack(f"<{len(ne)}Q", *ne)
        infos += struct.pack("<IQ", gtype, len(data))
        data += blob + b"\0" * (-len(blob) % 32)
    body = head + infos
    return body + b"\0" * (-len(body) % 32) + data


def test_convert_q4_0_and_run(tmp_path):
    w = np.random.default_rng(3).standard_normal((5, 64)).astype(np.float32)
    blob = _q4_0(w)
    path = tmp_path / "m.gguf"
    path.write_bytes(_gguf([("blk.0.w", [64, 5], 2, blob)]))
    listing = ggml_to_bp.convert(str(path), str(tmp_path / "out"))
    assert listing[0]["dtype"] == "q4_0" and listing[0]["shape"] == [5, 64]
    assert json.loads((tmp_path / "out" / "tensors.json").read_text())[0]["bytes"] == 5 * 2 * 18
    raw = (tmp_path / "out" / "blk.0.w.bin").read_bytes()
    assert raw == blob
    ctx = bp.Context()
    dev = ctx.open("cpu-ref")
    s = dev.stream()
    wq = dev.empty((5, 64), "q4_0")
    s.quantize(dev.tensor(w), wq)
    a, y = dev.tensor(np.ones((1, 64), np.float32)), dev.empty((1, 5))
    s.qmatmul(a, wq, y)
    s.synchronize()
    deq = dev.empty((5, 64))
    s.dequantize(wq, deq)
    s.synchronize()
    # the converted bytes decode like bp_quantize's: same dequantized sums
    blocks = np.frombuffer(raw, np.uint8).reshape(-1, 18)
    d = blocks[:, :2].copy().view(np.float16).astype(np.float32)
    q = np.concatenate([(blocks[:, 2:] & 15), (blocks[:, 2:] >> 4)], axis=1).astype(np.float32) - 8
    np.testing.assert_array_equal((q * d).reshape(5, 64), deq.numpy())
    np.testing.assert_allclose(y.numpy()[0], deq.numpy().sum(axis=1), rtol=1e-5)
    ctx.close()
