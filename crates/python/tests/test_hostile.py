"""Hostile bytes through Bag.from_bytes: a message payload that is a zstd bomb must not take
the interpreter down (it once aborted it, asking for 4 GiB)."""

from __future__ import annotations

import struct
from typing import Dict, List, Optional, Tuple

import bagscope

T0 = 1_764_460_800_000_000_000


def _s(text: str) -> bytes:
    b = text.encode()
    return struct.pack("<I", len(b)) + b


def _map(m: Dict[str, str]) -> bytes:
    body = b"".join(_s(k) + _s(v) for k, v in m.items())
    return struct.pack("<I", len(body)) + body


def _record(op: int, body: bytes) -> bytes:
    return bytes([op]) + struct.pack("<Q", len(body)) + body


def mcap(
    messages: List[Tuple[int, bytes]], metadata: Optional[Dict[str, str]] = None
) -> bytes:
    """A ros2-profile MCAP without chunks or summary: one std_msgs/msg/Header topic `/h`
    (definition built in), `messages` as (log time, payload), and a `rosbag2` Metadata
    record when given."""
    out = b"\x89MCAP0\r\n"
    out += _record(0x01, _s("ros2") + _s("test"))
    out += _record(0x03, struct.pack("<H", 1) + _s("std_msgs/msg/Header") + _s("ros2msg") + _s(""))
    out += _record(0x04, struct.pack("<HH", 1, 1) + _s("/h") + _s("cdr") + _map({}))
    for k, (t, data) in enumerate(messages):
        out += _record(0x05, struct.pack("<HIQQ", 1, k + 1, t, t) + data)
    if metadata is not None:
        out += _record(0x0C, _s("rosbag2") + _map(metadata))
    out += _record(0x0F, struct.pack("<I", 0))
    out += _record(0x02, struct.pack("<QQI", 0, 0, 0))
    return out + b"\x89MCAP0\r\n"


def header_cdr(t_ns: int, frame: str = "cam") -> bytes:
    f = frame.encode() + b"\0"
    return (
        b"\x00\x01\x00\x00"
        + struct.pack("<iI", t_ns // 1_000_000_000, t_ns % 1_000_000_000)
        + struct.pack("<I", len(f))
        + f
    )


def zstd_raw(payload: bytes) -> bytes:
    """`payload` as a zstd frame of one raw block (what rosbag2 message compression stores,
    without the compression)."""
    assert len(payload) < 256
    block = 1 | (0 << 1) | (len(payload) << 3)
    return b"\x28\xb5\x2f\xfd" + bytes([0x20, len(payload)]) + block.to_bytes(3, "little") + payload


def zero_bomb(total: int) -> bytes:
    """A zstd frame of `total` zero bytes: one 4-byte RLE block per 128 KiB (4 GiB: 128 kB)."""
    out = bytearray(b"\x28\xb5\x2f\xfd\x00" + bytes([7 << 3]))
    block = 128 << 10
    n = -(-total // block)
    for i in range(n):
        size = min(block, total - i * block)
        h = int(i + 1 == n) | (1 << 1) | (size << 3)
        out += h.to_bytes(3, "little") + b"\0"
    return bytes(out)


def messages(compressed: bool) -> List[Tuple[int, bytes]]:
    out = []
    for k in range(20):
        t = T0 + k * 100_000_000
        cdr = header_cdr(t - 1_000_000)
        if k == 10:
            out.append((t, zero_bomb(4 << 30)))
        else:
            out.append((t, zstd_raw(cdr) if compressed else cdr))
    return out


DECLARES = {
    "serialized_metadata": "version: 9\nstorage_identifier: mcap\n"
    "compression_format: zstd\ncompression_mode: MESSAGE\n"
}


def test_a_zstd_bomb_payload_is_capped() -> None:
    bag = bagscope.Bag.from_bytes(mcap(messages(True), DECLARES), name="bomb.mcap")
    r = bag.clocks()
    big = [w for w in r["warnings"] if w["code"] == "message_too_large"]
    assert len(big) == 1 and big[0]["data_loss"], r["warnings"]
    assert big[0]["message"].startswith("1 message(s)")
    (h,) = [t for t in r["topics"] if t["topic"] == "/h"]
    assert h["axis"] == "wall"
    # The 19 others read and decoded.
    assert bag.timing().num_rows == 19


def test_an_undeclared_zstd_payload_is_data() -> None:
    bag = bagscope.Bag.from_bytes(mcap(messages(False)), name="bomb.mcap")
    r = bag.clocks()
    assert not [w for w in r["warnings"] if w["code"] == "message_too_large"]
    (h,) = [t for t in r["topics"] if t["topic"] == "/h"]
    assert h["axis"] == "wall"
    assert bag.timing().num_rows == 20
