"""A small reader of GGUF (v2 and v3) metadata, for the tests: read_metadata(path) gives
{key: value} for every key-value pair of the header. Tensors are not read.

The layout (little-endian): magic "GGUF", version u32, tensor_count u64, kv_count u64, then
kv_count pairs of key (u64 length + bytes) and value (type u32 + payload). A string is a u64
length and that many bytes (decoded as UTF-8, with surrogateescape so that no byte is lost);
an array is an element type u32, a count u64 and the elements back to back."""
import struct

_SCALARS = {
    0: "<B",  # u8
    1: "<b",  # i8
    2: "<H",  # u16
    3: "<h",  # i16
    4: "<I",  # u32
    5: "<i",  # i32
    6: "<f",  # f32
    7: "<?",  # bool
    10: "<Q",  # u64
    11: "<q",  # i64
    12: "<d",  # f64
}
_STRING, _ARRAY = 8, 9


class GGUFError(ValueError):
    pass


class _Reader:
    def __init__(self, buf):
        self.buf = buf
        self.pos = 0

    def take(self, n):
        if n < 0 or self.pos + n > len(self.buf):
            raise GGUFError("GGUF: truncated at byte %d (want %d more)" % (self.pos, n))
        b = self.buf[self.pos:self.pos + n]
        self.pos += n
        return b

    def unpack(self, fmt):
        size = struct.calcsize(fmt)
        if self.pos + size > len(self.buf):
            raise GGUFError("GGUF: truncated at byte %d" % self.pos)
        (v,) = struct.unpack_from(fmt, self.buf, self.pos)
        self.pos += size
        return v

    def string(self):
        n = self.unpack("<Q")
        return bytes(self.take(n)).decode("utf-8", "surrogateescape")

    def value(self, ty):
        if ty in _SCALARS:
            return self.unpack(_SCALARS[ty])
        if ty == _STRING:
            return self.string()
        if ty == _ARRAY:
            elem = self.unpack("<I")
            count = self.unpack("<Q")
            if elem == _STRING:
                return [self.string() for _ in range(count)]
            if elem in _SCALARS:
                fmt = _SCALARS[elem]
                size = struct.calcsize(fmt)
                if self.pos + size * count > len(self.buf):
                    raise GGUFError("GGUF: truncated array at byte %d" % self.pos)
                vals = list(struct.unpack_from("<%d%s" % (count, fmt[1]), self.buf, self.pos))
                self.pos += size * count
                return vals
            if elem == _ARRAY:
                return [self.value(_ARRAY) for _ in range(count)]
            raise GGUFError("GGUF: unknown array element type %d" % elem)
        raise GGUFError("GGUF: unknown value type %d" % ty)


def read_metadata(path):
    """{key: value} of the GGUF file at path; raises GGUFError on a malformed header."""
    with open(path, "rb") as f:
        buf = f.read()
    r = _Reader(memoryview(buf))
    if bytes(r.take(4)) != b"GGUF":
        raise GGUFError("%s: no GGUF magic" % path)
    version = r.unpack("<I")
    if version not in (2, 3):
        raise GGUFError("%s: GGUF version %d (v2 and v3 are read)" % (path, version))
    r.unpack("<Q")  # tensor count
    n_kv = r.unpack("<Q")
    out = {}
    for _ in range(n_kv):
        key = r.string()
        ty = r.unpack("<I")
        out[key] = r.value(ty)
    return out


if __name__ == "__main__":
    import sys

    for p in sys.argv[1:]:
        for k, v in read_metadata(p).items():
            if isinstance(v, list):
                print("%s: [%d] %r..." % (k, len(v), v[:5]))
            else:
                print("%s: %r" % (k, v))
