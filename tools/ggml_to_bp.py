#!/usr/bin/env python3
"""ggml_to_bp: the Q8_0 / Q4_0 (and F32 / F16) tensors of a GGUF file as
backplane tensors. backplane's q8_0 / q4_0 blocks are ggml's byte for byte
(docs/ops.md, "Quantized types and ops"), so each tensor's data is copied as
is into OUT_DIR/<name>.bin, and OUT_DIR/tensors.json lists each one's dtype
(bp_dtype_parse name), shape (outermost first: ggml's ne reversed) and byte
size: what bp_tensor_init and bp_buffer_write need.

usage: ggml_to_bp.py MODEL.gguf OUT_DIR
"""
import json
import os
import struct
import sys

# ggml_type -> (backplane dtype, weights per block, bytes per block)
TYPES = {0: ("f32", 1, 4), 1: ("f16", 1, 2), 2: ("q4_0", 32, 18), 8: ("q8_0", 32, 34)}
# GGUF metadata value types -> struct format of a scalar (8: string, 9: array)
SCALARS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}


class Reader:
    def __init__(self, data):
        self.data, self.pos = data, 0

    def take(self, fmt):
        v = struct.unpack_from("<" + fmt, self.data, self.pos)
        self.pos += struct.calcsize("<" + fmt)
        return v[0] if len(v) == 1 else v

    def string(self):
        n = self.take("Q")
        s = self.data[self.pos:self.pos + n].decode("utf-8")
        self.pos += n
        return s

    def value(self, vtype):
        if vtype == 8:
            return self.string()
        if vtype == 9:
            etype, n = self.take("I"), self.take("Q")
            return [self.value(etype) for _ in range(n)]
        return self.take(SCALARS[vtype])


def read_gguf(data):
    """(tensor infos, data offset) of a GGUF v2/v3 file."""
    r = Reader(data)
    if r.take("4s") != b"GGUF":
        raise ValueError("not a GGUF file")
    version = r.take("I")
    if version < 2:
        raise ValueError(f"GGUF version {version} not supported (2 or 3)")
    n_tensors, n_kv = r.take("Q"), r.take("Q")
    meta = {}
    for _ in range(n_kv):
        key = r.string()
        meta[key] = r.value(r.take("I"))
    infos = []
    for _ in range(n_tensors):
        name, nd = r.string(), r.take("I")
        ne = [r.take("Q") for _ in range(nd)]
        infos.append((name, ne, r.take("I"), r.take("Q")))
    align = int(meta.get("general.alignment", 32))
    return infos, (r.pos + align - 1) // align * align


def convert(path, out_dir):
    data = open(path, "rb").read()
    infos, base = read_gguf(data)
    os.makedirs(out_dir, exist_ok=True)
    listing = []
    for name, ne, gtype, off in infos:
        if gtype not in TYPES:
            print(f"skip {name}: ggml type {gtype} has no backplane dtype", file=sys.stderr)
            continue
        dtype, per_block, block_bytes = TYPES[gtype]
        count = 1
        for e in ne:
            count *= e
        if ne[0] % per_block:
            raise ValueError(f"{name}: ne[0] = {ne[0]} is not whole {dtype} blocks")
        size = count // per_block * block_bytes
        blob = data[base + off:base + off + size]
        if len(blob) != size:
            raise ValueError(f"{name}: the file ends inside its data")
        fname = name.replace("/", "_") + ".bin"
        with open(os.path.join(out_dir, fname), "wb") as f:
            f.write(blob)
        listing.append({"name": name, "dtype": dtype, "shape": list(reversed(ne)), "bytes": size,
                        "file": fname})
    with open(os.path.join(out_dir, "tensors.json"), "w") as f:
        json.dump(listing, f, indent=1)
    return listing


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    for t in convert(sys.argv[1], sys.argv[2]):
        print(f"{t['name']}: {t['dtype']} {t['shape']} ({t['bytes']} bytes)")
