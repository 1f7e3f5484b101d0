"""rosbags' stamp extraction, the peer of `bagscope clocks` and `Bag.timing()` in
bench/peers.sh and bench/python.sh: every message of the bag deserialized with rosbags'
AnyReader and its header stamp read (a TF message's first transform's)."""
import sys
from pathlib import Path

from rosbags.highlevel import AnyReader

n = 0
with AnyReader([Path(sys.argv[1])]) as r:
    for conn, t, raw in r.messages():
        m = r.deserialize(raw, conn.msgtype)
        h = getattr(m, 'header', None)
        if h is None and getattr(m, 'transforms', None):
            h = m.transforms[0].header
        if h is not None:
            n += h.stamp.sec
print(n)
