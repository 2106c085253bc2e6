"""The trace channel's MAC and framing: SipHash reference vectors (Python and the shim's C), every record type
round-trips, and forged, truncated, replayed, reordered, dropped or oversized frames are detected."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from evaluator.tracing.frames import MAX_LENGTH, FrameParser, TamperKind, encode_frame
from evaluator.tracing.records import (
    DroppedRecord,
    ErrorRecord,
    ErrorStage,
    FlushRecord,
    KernelFlag,
    KernelRecord,
    MarkFlag,
    MarkRecord,
    MemcpyRecord,
    MemsetRecord,
    RecordParser,
    StartFlag,
    StartRecord,
    encode_record,
    encode_trace,
    parse_trace,
)
from evaluator.tracing.siphash import siphash24

# SipHash-2-4 reference vectors (the paper's appendix / the reference implementation's vectors.h): key 00..0f,
# message 00..(n-1) for n = 0..63, output as little-endian bytes.
SIPHASH_VECTORS = """
310e0edd47db6f72 fd67dc93c539f874 5a4fa9d909806c0d 2d7efbd796666785 b7877127e09427cf 8da699cd64557618
cee3fe586e46c9cb 37d1018bf50002ab 6224939a79f5f593 b0e4a90bdf82009e f3b9dd94c5bb5d7a a7ad6b22462fb3f4
fbe50e86bc8f1e75 903d84c02756ea14 eef27a8e90ca23f7 e545be4961ca29a1 db9bc2577fcc2a3f 9447be2cf5e99a69
9cd38d96f0b3c14b bd6179a71dc96dbb 98eea21af25cd6be c7673b2eb0cbf2d0 883ea3e395675393 c8ce5ccd8c030ca8
94af49f6c650adb8 eab8858ade92e1bc f315bb5bb835d817 adcf6b0763612e2f a5c91da7acaa4dde 716595876650a2a6
28ef495c53a387ad 42c341d8fa92d832 ce7cf2722f512771 e37859f94623f3a7 381205bb1ab0e012 ae97a10fd434e015
b4a31508beff4d31 81396229f0907902 4d0cf49ee5d4dcca 5c73336a76d8bf9a d0a704536ba93e0e 925958fcd6420cad
a915c29bc8067318 952b79f3bc0aa6d4 f21df2e41d4535f9 87577519048f53a9 10a56cf5dfcd9adb eb75095ccd986cd0
51a9cb9ecba312e6 96afadfc2ce666c7 72fe52975a4364ee 5a1645b276d592a1 b274cb8ebf87870a 6f9bb4203de7b381
eaecb2a30b22a87f 9924a43cc1315724 bd838d3aafbf8db7 0b1a2a3265d51aea 135079a3231ce660 932b2846e4d70666
e1915f5cb1eca46c f325965ca16d629f 575ff28e60381be5 724506eb4c328a95
""".split()
KEY = bytes(range(16))


def _vector(n: int) -> int:
    return int.from_bytes(bytes.fromhex(SIPHASH_VECTORS[n]), "little")


def test_siphash_reference_vectors():
    assert len(SIPHASH_VECTORS) == 64
    for n in range(64):
        assert siphash24(KEY, bytes(range(n))) == _vector(n), n


def test_siphash_rejects_wrong_key_size():
    with pytest.raises(ValueError, match="16-byte key"):
        siphash24(b"short", b"")


def test_c_siphash_reference_vectors(tmp_path: Path):
    """The shim's C implementation (siphash24.h), compiled on its own, gives the same 64 vectors."""
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        pytest.skip("no C compiler")
    header_dir = Path(__file__).resolve().parents[2] / "evaluator" / "tracing"
    program = tmp_path / "vectors.c"
    program.write_text(
        '#include <stdio.h>\n#include <inttypes.h>\n#include "siphash24.h"\n'
        "int main(void) { uint8_t k[16], m[64]; for (int i = 0; i < 16; i++) k[i] = (uint8_t)i;\n"
        "for (int i = 0; i < 64; i++) m[i] = (uint8_t)i;\n"
        'for (int n = 0; n < 64; n++) printf("%016" PRIx64 "\\n", ke_siphash24(k, m, (size_t)n));\n'
        "return 0; }\n")
    exe = tmp_path / "vectors"
    subprocess.run([compiler, "-std=gnu11", "-Wall", "-Werror", f"-I{header_dir}", "-o", str(exe), str(program)],
                   check=True)
    out = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout.split()
    assert [int(v, 16) for v in out] == [_vector(n) for n in range(64)]


def _sample_records() -> list:
    return [
        ErrorRecord(0, ErrorStage.DRIVER, 0, "no CUDA driver"),
        StartRecord(1, 1, StartFlag.CUPTI_LOADED | StartFlag.ACTIVE, 130001, 130001, 4242),
        MarkRecord(2, 0x0101000000000003, 1000, 0, 7, MarkFlag(0)),
        KernelRecord(3, 1100, 1200, 1050, 0, 1, 7, 99, 0, (64, 1, 1), (128, 1, 1), 0, 512, 26, KernelFlag(0), 10,
                     "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEESt5arrayIPcLm1EEEEviT0_T1_"),
        MemcpyRecord(4, 1200, 1300, 4096, 0, 1, 7, 100, 0, 8, 3, 3, 1, False, 0, 0),
        MemsetRecord(5, 1300, 1400, 4096, 0, 1, 7, 101, 0, 0, 3, 0),
        DroppedRecord(6, 3, 0, 7),
        FlushRecord(7, 1500, 0, MarkFlag(0)),
    ]


def test_every_record_type_round_trips():
    key = bytes(range(16, 32))
    records = _sample_records()
    parsed = parse_trace(key, encode_trace(key, records))
    assert parsed.tampered is None
    assert list(parsed.records) == records


def test_records_arrive_byte_by_byte():
    key = bytes(range(16))
    data = encode_trace(key, _sample_records())
    parser = RecordParser(key)
    got = []
    for i in range(len(data)):
        got += parser.feed(data[i:i + 1])
    assert parser.finish() is None
    assert got == _sample_records()


def _frames(key: bytes) -> list[bytes]:
    return [encode_record(key, r) for r in _sample_records()]


def test_forged_frame_has_a_bad_mac():
    key = bytes(range(16))
    frames = _frames(key)
    forged = encode_frame(bytes(16), 3, 6, frames[2][13:-8])  # right seq and layout, wrong key
    parsed = parse_trace(key, b"".join(frames[:3]) + forged + b"".join(frames[3:]))
    assert parsed.tampered is not None and parsed.tampered.kind is TamperKind.BAD_MAC
    assert parsed.tampered.expected_seq == 3
    assert len(parsed.records) == 3  # nothing after the forgery is taken as evidence
    assert "wrote into the verifier's trace channel" in parsed.tampered.message


def test_flipped_payload_bit_has_a_bad_mac():
    key = bytes(range(16))
    frames = _frames(key)
    corrupted = bytearray(frames[3])
    corrupted[20] ^= 1
    parsed = parse_trace(key, frames[0] + frames[1] + frames[2] + bytes(corrupted))
    assert parsed.tampered is not None and parsed.tampered.kind is TamperKind.BAD_MAC


def test_replayed_frame_is_detected():
    key = bytes(range(16))
    frames = _frames(key)
    parsed = parse_trace(key, b"".join(frames[:4]) + frames[2] + b"".join(frames[4:]))
    assert parsed.tampered is not None and parsed.tampered.kind is TamperKind.REPLAYED
    assert len(parsed.records) == 4


def test_reordered_frames_are_detected():
    key = bytes(range(16))
    frames = _frames(key)
    parsed = parse_trace(key, frames[0] + frames[2] + frames[1])
    assert parsed.tampered is not None and parsed.tampered.kind is TamperKind.MISSING
    assert [r.seq for r in parsed.records] == [0]


def test_dropped_frame_is_detected():
    key = bytes(range(16))
    frames = _frames(key)
    parsed = parse_trace(key, b"".join(frames[:3]) + b"".join(frames[4:]))
    assert parsed.tampered is not None and parsed.tampered.kind is TamperKind.MISSING
    assert parsed.tampered.expected_seq == 3


def test_truncated_channel_is_detected():
    key = bytes(range(16))
    data = b"".join(_frames(key))
    parsed = parse_trace(key, data[:-5])
    assert parsed.tampered is not None and parsed.tampered.kind is TamperKind.TRUNCATED
    assert parse_trace(key, data[:-5], complete=False).tampered is None  # still arriving: not yet a violation


def test_impossible_length_is_detected():
    key = bytes(range(16))
    for length in (0, 16, MAX_LENGTH + 1, 0xFFFFFFFF):
        parsed = parse_trace(key, _frames(key)[0] + length.to_bytes(4, "little") + bytes(40))
        assert parsed.tampered is not None and parsed.tampered.kind is TamperKind.BAD_LENGTH, length


def test_authentic_frame_with_bad_payload_is_refused():
    key = bytes(range(16))
    bad_mark = encode_frame(key, 0, 6, b"\x00" * 10)  # a MARK is 29 bytes
    unknown_type = encode_frame(key, 0, 77, b"")
    bad_string = encode_frame(key, 0, 2, (1).to_bytes(2, "little") + bytes(4) + (50).to_bytes(2, "little") + b"x")
    for frame in (bad_mark, unknown_type, bad_string):
        parsed = parse_trace(key, frame)
        assert parsed.tampered is not None and parsed.tampered.kind is TamperKind.BAD_PAYLOAD


def test_parser_stops_for_good_after_a_violation():
    key = bytes(range(16))
    frames = _frames(key)
    parser = FrameParser(key)
    assert len(parser.feed(frames[0] + b"\xff" * 8)) == 1
    assert parser.feed(frames[1]) == []
    assert parser.tampered is not None


def test_oversized_trace_is_refused():
    key = bytes(range(16))
    parser = RecordParser(key)
    parser.refuse_more(1 << 20)
    assert parser.tampered is not None and parser.tampered.kind is TamperKind.TOO_LARGE


def test_names_are_escaped_to_printable_ascii():
    key = bytes(range(16))
    record = KernelRecord(0, 1, 2, 0, 0, 0, 7, 1, 0, (1, 1, 1), (1, 1, 1), 0, 0, 0, KernelFlag(0), 10, "a\x1b\\é`")
    (kernel,) = parse_trace(key, encode_record(key, record)).records
    assert kernel.name == "a\\x1b\\x5c\\xc3\\xa9`"
    assert kernel.name.isascii() and kernel.name.isprintable()
