"""What cwm's tracer reads from CPython and glibc beyond the Python API
(64-bit CPython 3.9 to 3.13 on glibc), each checked by a probe at import
and replaced by a slower, exact fallback when the probe fails:

- a list's item array, so that "does this list still hold the same
  objects" is a memcmp (see items_view), not a Python-level loop;
- a dict's version tag (PEP 509), which moves whenever a key is added or
  removed or a value is replaced by another object, and not when a value is
  set to the object it already is: a frame's f_locals dict, refreshed by
  each f_locals read, then tells whether any local was bound, unbound or
  rebound since the previous read (see version);
- glibc's malloc trimming (see keep_freed_memory).

Why: the tracer's cost is Python work per line event; these turn the two
most common per-event questions into one C call each.
"""

import ctypes
import struct
from builtins import BaseException, OSError, AttributeError, dict, float, id, len, object, type

PTR = ctypes.sizeof(ctypes.c_void_p)
ITEMS = 3 * PTR     # PyListObject: refcount, type, size, then ob_item
_VERSION = 3 * PTR   # PyDictObject: refcount, type, ma_used, then ma_version_tag
address = ctypes.c_void_p.from_address
_u64 = ctypes.c_uint64.from_address


def _probe_items():
    try:
        probe = [object(), object()]
        items = address(id(probe) + ITEMS).value
        return ctypes.string_at(items, 2 * PTR) == struct.pack("PP", id(probe[0]), id(probe[1]))
    except BaseException:
        return False


def _probe_version():
    try:
        x = object()
        d = {"a": x}
        tag = _u64(id(d) + _VERSION)
        v0 = tag.value
        d["a"] = x  # the same object: no move
        v1 = tag.value
        d["a"] = object()
        v2 = tag.value
        d["b"] = 1
        v3 = tag.value
        del d["b"]
        return v0 == v1 and v1 != v2 and v2 != v3 and tag.value != v3
    except BaseException:
        return False


ITEMS_OK = _probe_items()
VERSION_OK = _probe_version()


def items_address(v):
    """The address of list v's item array, or -1 when it cannot be read."""
    if not ITEMS_OK or not v:
        return -1
    return address(id(v) + ITEMS).value


def items_view(v, items):
    """A ctypes array over the item pointers of list v at address items; its
    .raw is a bytes copy of them. Valid while v keeps that array and length
    (the caller checks both, see values.rescan)."""
    return (ctypes.c_char * (len(v) * PTR)).from_address(items)


class _NoVersion:
    """Stands for a version tag that cannot be read: never equal to itself."""

    value = float("nan")


def version(d):
    """An object whose .value is dict d's version tag; the caller must keep
    d alive while it reads it. Only a frame's own f_locals dict has a tag
    that follows its locals: a 3.13 proxy (PEP 667) or a copy made in
    order (flocals.ordered, a dict subclass) gets a reader that never
    compares equal, so every local is compared at each step.
    """
    if not VERSION_OK or type(d) is not dict:
        return _NoVersion()
    return _u64(id(d) + _VERSION)


def keep_freed_memory():
    """Tells glibc's malloc to keep freed memory for reuse instead of
    handing it back to the kernel (trimming the heap, unmapping large
    blocks). On the VMs cwm runs on a page fault costs ~20 us, and a runner
    that traces one function after another (or a test run) would fault in
    the same pages again for every trace: the table of a 4 MB trace costs
    ~1,000 faults each time. Memory use is the peak, as before; only its
    return to the kernel is deferred to the process's exit."""
    try:
        libc = ctypes.CDLL(None)
        libc.mallopt(-1, 1 << 28)  # M_TRIM_THRESHOLD
        libc.mallopt(-3, 1 << 28)  # M_MMAP_THRESHOLD
    except (OSError, AttributeError):  # not glibc
        pass
