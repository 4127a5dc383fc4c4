"""BF16 <-> numpy conversion, rounding to nearest even (the wire format of gemm.v1).

BF16 is the upper 16 bits of an IEEE-754 float32. numpy has no bfloat16 dtype, so BF16 data is
held as uint16 bit patterns and widened to float32 (exactly) on the way back.
"""

import numpy as np

__all__ = ["to_bf16", "from_bf16", "round_to_bf16"]


def _f32_bits_to_bf16(u: np.ndarray) -> np.ndarray:
    """Rounds float32 bit patterns (uint32) to BF16 bit patterns, ties to even; NaN stays NaN."""
    # For every non-NaN u, u + 0x7fff + lsb <= 0xff807fff: no uint32 overflow.
    rounded = ((u + np.uint32(0x7FFF) + ((u >> np.uint32(16)) & np.uint32(1))) >> np.uint32(16))
    out = rounded.astype(np.uint16)
    nan = (u & np.uint32(0x7FFFFFFF)) > np.uint32(0x7F800000)
    if nan.any():
        out[nan] = ((u[nan] >> np.uint32(16)) | np.uint32(0x0040)).astype(np.uint16)  # quiet NaN
    return out


def to_bf16(x) -> np.ndarray:
    """Converts an array-like of numbers to BF16 bit patterns (uint16, same shape), rounding to
    nearest even. float16/float32 input is rounded once; float64 (and integer) input is rounded
    directly too (no double-rounding error through float32). NaN stays NaN, +-Inf stays Inf, values
    beyond the largest BF16 become Inf."""
    x = np.asarray(x)
    if x.dtype in (np.float32, np.float16, np.bool_):
        f = np.ascontiguousarray(x, dtype=np.float32)
        return _f32_bits_to_bf16(f.view(np.uint32))
    if x.dtype.kind not in "fiub":
        raise TypeError(f"cannot convert dtype {x.dtype} to BF16")
    x64 = np.ascontiguousarray(x, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        f = x64.astype(np.float32)
    u = f.view(np.uint32)
    out = _f32_bits_to_bf16(u)
    # NOTE: float64 -> float32 -> BF16 rounds twice. It can only go wrong when the first rounding
    # lands exactly on a BF16 midpoint (low 16 bits 0x8000) from a value that was not on it: then
    # the true value decides the direction, not the tie-to-even rule.
    tie = ((u & np.uint32(0xFFFF)) == np.uint32(0x8000)) & np.isfinite(f)
    if tie.any():
        exact = f[tie].astype(np.float64)
        orig = x64[tie]
        inexact = exact != orig
        if inexact.any():
            idx = np.flatnonzero(tie)[inexact]
            up = np.abs(orig[inexact]) > np.abs(exact[inexact])  # away from zero
            trunc = (u[idx] >> np.uint32(16)).astype(np.uint16)
            out[idx] = np.where(up, trunc + np.uint16(1), trunc)
    return out


def from_bf16(bits) -> np.ndarray:
    """Widens BF16 bit patterns (uint16 array-like) to float32 (exact)."""
    b = np.ascontiguousarray(bits, dtype=np.uint16)
    return (b.astype(np.uint32) << np.uint32(16)).view(np.float32)


def round_to_bf16(x) -> np.ndarray:
    """Rounds to BF16 precision and back to float32: the values the server computes with."""
    return from_bf16(to_bf16(x))
