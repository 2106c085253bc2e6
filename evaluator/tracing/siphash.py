"""SipHash-2-4, the MAC of every trace frame (the shim computes the same function in ``siphash24.h``).

Written from the specification (Aumasson and Bernstein, 2012): a keyed 64-bit PRF over short messages, cheap
enough to check every record a candidate process sends, and unforgeable without the 16-byte key that only the
parent and the shim hold.
"""

from __future__ import annotations

_MASK = (1 << 64) - 1


def _rotl(x: int, b: int) -> int:
    return ((x << b) | (x >> (64 - b))) & _MASK


def siphash24(key: bytes, message: bytes) -> int:
    """The 64-bit SipHash-2-4 of ``message`` under the 16-byte ``key`` (little-endian, as the paper defines)."""
    if len(key) != 16:
        raise ValueError(f"SipHash needs a 16-byte key, got {len(key)} bytes")
    k0 = int.from_bytes(key[:8], "little")
    k1 = int.from_bytes(key[8:], "little")
    v0 = 0x736F6D6570736575 ^ k0
    v1 = 0x646F72616E646F6D ^ k1
    v2 = 0x6C7967656E657261 ^ k0
    v3 = 0x7465646279746573 ^ k1

    def rounds(n: int) -> None:
        nonlocal v0, v1, v2, v3
        for _ in range(n):
            v0 = (v0 + v1) & _MASK
            v1 = _rotl(v1, 13) ^ v0
            v0 = _rotl(v0, 32)
            v2 = (v2 + v3) & _MASK
            v3 = _rotl(v3, 16) ^ v2
            v0 = (v0 + v3) & _MASK
            v3 = _rotl(v3, 21) ^ v0
            v2 = (v2 + v1) & _MASK
            v1 = _rotl(v1, 17) ^ v2
            v2 = _rotl(v2, 32)

    whole = len(message) - len(message) % 8
    for i in range(0, whole, 8):
        m = int.from_bytes(message[i:i + 8], "little")
        v3 ^= m
        rounds(2)
        v0 ^= m
    last = ((len(message) & 0xFF) << 56) | int.from_bytes(message[whole:], "little")
    v3 ^= last
    rounds(2)
    v0 ^= last
    v2 ^= 0xFF
    rounds(4)
    return v0 ^ v1 ^ v2 ^ v3
