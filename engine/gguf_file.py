"""GGUF files, read: the header, the metadata, each tensor's name, shape, type and bytes.

The layout (ggml's docs/gguf.md), every number little-endian:
    "GGUF", version (uint32, 2 or 3), n_tensors (uint64), n_kv (uint64)
    n_kv key/value pairs: key (string), value type (uint32), value
    n_tensors tensor infos: name (string), n_dims (uint32), ne[n_dims] (uint64), type (uint32), offset (uint64)
    padding to general.alignment (32 unless the metadata says), then the tensors' data, each at its offset
A string is a uint64 length and that many bytes of UTF-8; an array is an element type (uint32), a count
(uint64) and the elements. ne lists the sizes fastest-varying first, so a matrix of `rows` rows of `cols`
numbers has ne = [cols, rows]: numpy's shape is ne reversed.

The file is memory-mapped read-only: opening one reads its header and metadata, never its tensors' bytes.
Arrays of numbers in the metadata are copied out; arrays of strings (a tokenizer's tokens and merges,
about 100,000 of them) are decoded when first read. Dequantizing is llama.cpp's own `gguf` package's work
(`dequantize`), imported only when a tensor is read.
"""

import contextlib
import hashlib
import math
import mmap
import struct
from functools import cached_property

import numpy as np

from .errors import FileError
from .records import record

MAGIC = b"GGUF"
VERSIONS = (2, 3)  # version 1 counted in uint32 and has not been written since 2023
ALIGNMENT = 32  # general.alignment's default
MAX_DIMS = 4  # ggml's GGML_MAX_DIMS
MAX_COUNT = 10**7  # tensors, keys or array elements: far above any model, far below a corrupt count's billions
STRING, ARRAY = 8, 9
SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
NUMBERS = {0: "<u1", 1: "<i1", 2: "<u2", 3: "<i2", 4: "<u4", 5: "<i4", 6: "<f4", 7: "?", 10: "<u8", 11: "<i8",
           12: "<f8"}  # the same types as numpy dtypes, for arrays
FLOATS = {0: "<f4", 1: "<f2"}  # F32 and F16 tensors are read as they are; every other type goes to gguf


@record
class TensorInfo:
    """One tensor: its name, numpy shape (ne reversed), ggml type number, and where its bytes start in the file."""

    name: str
    shape: tuple[int, ...]
    type: int
    start: int  # in the file: the data section's start plus the tensor's offset
    n_bytes: int

    @property
    def size(self) -> int:
        """Its number of elements."""
        return math.prod(self.shape)

    @property
    def type_name(self) -> str:
        """ggml's name for its type: F32, Q4_1, Q8_0..."""
        return type_name(self.type)


class Strings:
    """An array of strings in the metadata, decoded on first use: a sequence of str."""

    def __init__(self, buf, start: int, count: int):
        self._buf, self._start, self._count = buf, start, count

    def __len__(self) -> int:
        return self._count

    def __getitem__(self, i):
        return self.items[i]

    def __iter__(self):
        return iter(self.items)

    @cached_property
    def items(self) -> list[str]:
        """Every string, in order."""
        out, buf, at, unpack = [], self._buf, self._start, struct.Struct("<Q").unpack_from
        for _ in range(self._count):
            (n,) = unpack(buf, at)
            out.append(str(buf[at + 8:at + 8 + n], "utf-8", "replace"))
            at += 8 + n
        return out


class GGUFFile:
    """An open GGUF file: `version`, `metadata` (key -> value), `tensors` (name -> TensorInfo), in the file's order,
    and its size, `n_bytes`.

    FileError names what is wrong with a file that is not one: a bad magic, a version, a count or an offset
    past the end."""

    def __init__(self, path):
        self.path = str(path)
        with open(path, "rb") as f:
            try:
                self._map = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
            except ValueError:  # an empty file cannot be mapped
                raise self._bad("it is empty", "文件是空的") from None
        self._buf = memoryview(self._map)
        self.n_bytes, self._at = len(self._map), 0
        try:
            self._read_header()
        except (struct.error, UnicodeDecodeError):
            raise self._bad("it ends too early or holds a malformed field", "文件过早结束，或有字段格式不对") from None

    def _bad(self, en: str, zh: str) -> FileError:
        return FileError(f"{self.path} is not a GGUF file the tour can read: {en}",
                         f"{self.path} 不是导览能读的 GGUF 文件：{zh}")

    def _read_header(self) -> None:
        if bytes(self._buf[:4]) != MAGIC:
            raise self._bad("it does not start with GGUF", "它不以 GGUF 开头")
        self._at = 4
        self.version = self._scalar("<I")
        if self.version not in VERSIONS:
            raise self._bad(f"version {self.version} (this reader knows 2 and 3)",
                            f"版本 {self.version}（本读取器只认 2 和 3）")
        n_tensors, n_kv = self._count(), self._count()
        self.metadata = {}
        for _ in range(n_kv):
            key = self._string()
            self.metadata[key] = self._value(self._scalar("<I"))
        infos = []
        for _ in range(n_tensors):
            name = self._string()
            n_dims = self._scalar("<I")
            if n_dims > MAX_DIMS:
                raise self._bad(f"tensor {name} has {n_dims} dimensions", f"张量 {name} 有 {n_dims} 个维度")
            ne = [self._scalar("<Q") for _ in range(n_dims)]
            infos.append((name, tuple(reversed(ne)), self._scalar("<I"), self._scalar("<Q")))
        align = self.metadata.get("general.alignment", ALIGNMENT)
        if not isinstance(align, int) or align < 1:
            raise self._bad(f"general.alignment is {align!r}", f"general.alignment 是 {align!r}")
        self.data_start = -(-self._at // align) * align
        self.tensors = {}
        for name, shape, kind, offset in infos:
            n_bytes = tensor_bytes(shape, kind, self._bad, name)
            start = self.data_start + offset
            if offset % align or start + n_bytes > len(self._buf):
                raise self._bad(f"tensor {name} lies outside the file", f"张量 {name} 超出了文件范围")
            self.tensors[name] = TensorInfo(name, shape, kind, start, n_bytes)

    # --- the fields, one at a time -------------------------------------------------------------------------

    def _scalar(self, fmt: str):
        (value,) = struct.unpack_from(fmt, self._buf, self._at)
        self._at += struct.calcsize(fmt)
        return value

    def _count(self) -> int:
        n = self._scalar("<Q")
        if n > MAX_COUNT:
            raise self._bad(f"a count of {n:,}", f"计数为 {n:,}")
        return n

    def _string(self) -> str:
        n = self._count()
        if self._at + n > len(self._buf):
            raise struct.error("past the end")
        text = str(self._buf[self._at:self._at + n], "utf-8")
        self._at += n
        return text

    def _value(self, kind: int):
        if kind in SCALARS:
            return self._scalar(SCALARS[kind])
        if kind == STRING:
            return self._string()
        if kind != ARRAY:
            raise self._bad(f"a value of type {kind}", f"值的类型是 {kind}")
        kind, n = self._scalar("<I"), self._count()
        if kind in NUMBERS:
            n_bytes = n * np.dtype(NUMBERS[kind]).itemsize
            if self._at + n_bytes > len(self._buf):
                raise struct.error("past the end")
            a = np.frombuffer(self._buf, NUMBERS[kind], n, self._at).copy()  # a copy: the file may close
            self._at += n_bytes
            return a
        if kind == STRING:
            start, unpack = self._at, struct.Struct("<Q").unpack_from
            for _ in range(n):  # skipped here, decoded when read
                self._at += 8 + unpack(self._buf, self._at)[0]
            if self._at > len(self._buf):
                raise struct.error("past the end")
            return Strings(self._buf, start, n)
        raise self._bad(f"an array of type {kind} in the metadata", f"元数据里有类型为 {kind} 的数组")

    # --- the tensors ---------------------------------------------------------------------------------------

    def raw(self, name: str) -> np.ndarray:  # -> [rows..., bytes per row] uint8, a read-only view of the map
        """A tensor's bytes as they are in the file, one row per row of the tensor."""
        t = self.tensors[name]
        rows = t.size // t.shape[-1] if t.shape else 1
        return np.frombuffer(self._buf, np.uint8, t.n_bytes, t.start).reshape(*t.shape[:-1], t.n_bytes // rows)

    def array(self, name: str) -> np.ndarray:  # -> float32, the tensor's shape
        """A tensor's numbers as float32: F32 and F16 read as they are, every other type dequantized by
        llama.cpp's gguf package. A new array; an F32 tensor is copied out of the map."""
        t = self.tensors[name]
        if t.type in FLOATS:
            a = np.frombuffer(self._buf, FLOATS[t.type], t.size, t.start)
            return a.astype(np.float32).reshape(t.shape)
        from gguf.quants import dequantize
        return dequantize(self.raw(name), t.type).reshape(t.shape)

    def sha256(self) -> str:
        """The sha256 of the whole file, read from the map: the bytes its tensors are read from."""
        return hashlib.sha256(self._buf).hexdigest()

    def close(self) -> None:
        """Let go of the file; the metadata stays readable. An array raw() gave keeps the map open until it
        goes (array() gives copies)."""
        for value in self.metadata.values():
            if isinstance(value, Strings):
                _ = value.items  # decoded now, while the map is there
        with contextlib.suppress(BufferError):  # a view of the map is still held: it closes when that goes
            self._buf.release()
            self._map.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


# --- ggml's types ---------------------------------------------------------------------------------------------

# type number -> (name, numbers per block, bytes per block): ggml's GGML_QUANT_SIZES, for the types a Llama
# GGUF holds; gguf.constants has every one, and a test checks these against it
TYPES = {0: ("F32", 1, 4), 1: ("F16", 1, 2), 2: ("Q4_0", 32, 18), 3: ("Q4_1", 32, 20), 6: ("Q5_0", 32, 22),
         7: ("Q5_1", 32, 24), 8: ("Q8_0", 32, 34), 10: ("Q2_K", 256, 84), 11: ("Q3_K", 256, 110),
         12: ("Q4_K", 256, 144), 13: ("Q5_K", 256, 176), 14: ("Q6_K", 256, 210), 30: ("BF16", 1, 2)}


def type_name(kind: int) -> str:
    """ggml's name for a type number, or "type N" for one this reader does not know."""
    return TYPES[kind][0] if kind in TYPES else f"type {kind}"


def tensor_bytes(shape, kind: int, bad=None, name: str = "") -> int:
    """The bytes a tensor of this shape and type takes; FileError (through `bad`) for a type this reader does
    not know or a row that is not whole blocks."""
    if kind not in TYPES:
        known = ", ".join(t[0] for t in TYPES.values())
        raise bad(f"tensor {name} has ggml type {kind}, which the tour cannot dequantize (it can: {known})",
                  f"张量 {name} 的 ggml 类型是 {kind}，导览无法反量化（支持：{known}）")
    _, block, block_bytes = TYPES[kind]
    cols = shape[-1] if shape else 1
    if cols % block:
        raise bad(f"tensor {name}'s rows of {cols} are not whole blocks of {block}",
                  f"张量 {name} 每行 {cols} 个数，不是 {block} 的整数倍")
    return math.prod(shape) // block * block_bytes
