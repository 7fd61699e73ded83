"""Chunk keys to grid positions, many at once (the listing of a Zarr array).

Matching every key with a regular expression and converting its numbers with ``int`` one by
one made a listing cost several bare ``os.scandir`` walks (docs/performance.md); here the keys
of a batch are joined into one byte string and parsed with a few numpy operations over its bytes.

The rule (``parse_keys``): a key names a position when it is ``head`` followed by ``ndim``
numbers of ASCII digits (``0``-``9``, at least one each) joined by ``sep``, and nothing else.
Leading zeros count for nothing (``007`` is 7).  Keys that break the rule are left out; the
others keep their order, or with ``sort`` come in the order of the keys sorted as strings
(what a sorted listing gives, for a listing made in no order).  Exact for any key: a number of
more than 18 digits (past what an ``int64`` holds) or a key holding a NUL character sends the
batch to the one-key-at-a-time path (``_parse_one_by_one``), which gives the same answer with
Python integers.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

#: Digits of the longest number the vectorised path converts (10**18 - 1 < 2**63).
MAX_DIGITS = 18
_POW10 = 10 ** np.arange(MAX_DIGITS, dtype=np.int64)
_ZERO, _NUL = ord("0"), 0


def parse_keys(keys: Sequence[str], head: str, sep: str, ndim: int,
               sort: bool = False) -> npt.NDArray[np.int64] | list[tuple[int, ...]]:
    """The grid positions named by ``keys`` under the rule of the module docstring: an
    ``(N, ndim)`` int64 array in the keys' order, or with ``sort`` in the order of the keys
    sorted as strings (as ``sorted(keys)`` has them: a listing in no order comes out as a
    sorted one would); from the one-key-at-a-time path a list of tuples of Python ints.
    ``sep`` is one ASCII character, not a digit; ``head`` may be empty."""
    if len(sep) != 1 or not sep.isascii() or sep.isdigit() or sep == "\0" or ndim < 1:
        raise ValueError(f"separator {sep!r} and {ndim} axes")
    if not keys:
        return np.zeros((0, ndim), dtype=np.int64)
    text = ("\0".join(keys) + "\0").encode("utf-8", "surrogatepass")
    if text.count(b"\0") != len(keys):  # a key holds a NUL: it would split in two
        return _parse_one_by_one(keys, head, sep, ndim, sort)
    got = _parse_joined(text, len(keys), head.encode("utf-8", "surrogatepass"), ord(sep), ndim,
                        sort)
    return _parse_one_by_one(keys, head, sep, ndim, sort) if got is None else got


def _parse_joined(text: bytes, count: int, head: bytes, sep: int, ndim: int,
                  sort: bool) -> npt.NDArray[np.int64] | None:
    """``parse_keys`` of the ``count`` keys in ``text``, each followed by a NUL; None when a
    number of a valid key is too long for int64."""
    b = np.frombuffer(text, dtype=np.uint8)
    nul = b == _NUL
    stops = np.flatnonzero(nul).astype(np.int32)  # key i is text[starts[i]:stops[i]]
    starts = np.empty(count, dtype=np.int32)
    starts[0] = 0
    starts[1:] = stops[:-1] + 1
    h = len(head)
    body_at = np.minimum(starts + h, stops)  # where its numbers begin (its NUL: too short)
    # 1. long enough for the head and ``ndim`` one-digit numbers, and the head is there
    valid = stops - starts >= h + 2 * ndim - 1
    if h:
        cand = np.flatnonzero(valid)
        same = b[starts[cand, None] + np.arange(h)] == np.frombuffer(head, dtype=np.uint8)
        valid[cand[~same.all(axis=1)]] = False
    # 2. the body holds digits and ``ndim - 1`` separators, none first, last or next to
    # another (``reduceat`` over the bounds head, body, head, body, ...: per body the
    # separators and whether a byte breaks the rule)
    digit = b - np.uint8(_ZERO) < 10
    is_sep = b == sep
    breaks = ~(digit | is_sep | nul)
    breaks[1:] |= is_sep[1:] & is_sep[:-1]
    bounds = np.empty(2 * count, dtype=np.int32)
    bounds[0::2] = starts
    bounds[1::2] = body_at
    valid &= np.add.reduceat(is_sep, bounds, dtype=np.int32)[1::2] == ndim - 1
    valid &= ~np.logical_or.reduceat(breaks, bounds)[1::2]
    valid &= ~is_sep[body_at] & ~is_sep[stops - 1]
    nv = int(np.count_nonzero(valid))
    if nv == 0:
        return np.zeros((0, ndim), dtype=np.int64)
    # 3. the numbers of the valid keys: each ends at a separator or the key's NUL
    parts = np.zeros(2 * count, dtype=bool)
    parts[1::2] = valid
    in_valid_body = np.repeat(parts, np.diff(np.append(bounds, len(b))))
    ends = np.flatnonzero(in_valid_body & (is_sep | nul)).astype(np.int32).reshape(nv, ndim)
    begins = np.empty_like(ends)
    begins[:, 0] = body_at[valid]
    begins[:, 1:] = ends[:, :-1] + 1
    lengths = ends - begins
    width = int(lengths.max())
    if width > MAX_DIGITS:
        return None
    # each number from its last digit back: the k-th digit from the end counts 10**k
    out: npt.NDArray[np.int64] = b[ends - 1].astype(np.int64) - _ZERO
    for k in range(1, width):
        d = b[np.maximum(ends - (k + 1), 0)].astype(np.int64) - _ZERO
        out += np.where(lengths > k, d, 0) * _POW10[k]
    if sort:  # the valid keys share their head: their bodies in string order
        out = out[_string_order(b, body_at[valid], stops[valid])]
    return out


def _string_order(b: npt.NDArray[np.uint8], begin: npt.NDArray[np.int32],
                  end: npt.NDArray[np.int32]) -> npt.NDArray[np.intp]:
    """The order that sorts the distinct ASCII strings ``b[begin[i]:end[i]]`` as Python sorts
    strings: each read as big-endian 64-bit words, the bytes past its end masked to zero (a
    shorter string before a longer one it begins), and the rows of words sorted."""
    length = (end - begin).astype(np.int64)
    longest = int(length.max())
    padded = np.concatenate([b, np.zeros(longest + 8, dtype=np.uint8)])
    at8 = np.ndarray((len(b) + longest + 1,), dtype=">u8", buffer=padded,
                     strides=(1,))  # the word at any byte offset
    words = [(at8[begin + j] & _KEEP[np.clip(length - j, 0, 8)]).astype(np.uint64)
             for j in range(0, longest, 8)]
    if len(words) == 1:  # the strings are distinct: no need of a stable sort
        order: npt.NDArray[np.intp] = np.argsort(words[0])
    else:
        order = np.lexsort(words[::-1])
    return order


#: ``_KEEP[n]``: the mask of the first ``n`` bytes of a big-endian 64-bit word.
_KEEP = np.array([(0xFFFFFFFFFFFFFFFF << (64 - 8 * n)) & 0xFFFFFFFFFFFFFFFF
                  for n in range(9)], dtype=np.uint64)


def _parse_one_by_one(keys: Sequence[str], head: str, sep: str, ndim: int,
                      sort: bool = False) -> list[tuple[int, ...]]:
    """``parse_keys`` one key at a time (the rule as a regular expression)."""
    match = re.compile(re.escape(head) + re.escape(sep).join(["([0-9]+)"] * ndim)).fullmatch
    out = []
    for key in sorted(keys) if sort else keys:
        m = match(key)
        if m is not None:
            out.append(tuple(int(g) for g in m.groups()))
    return out


__all__ = ["parse_keys", "MAX_DIGITS"]
