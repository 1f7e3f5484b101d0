#!/usr/bin/env python3
"""Rewrites the shared arm MCAP bags as rosbag2 sqlite3 (.db3) bags with the `rosbags` package.

    python3 -m venv /tmp/v && /tmp/v/bin/pip install rosbags
    /tmp/v/bin/python tests/data/db3/make_fixtures.py ../shared/bags tests/data/db3

* arm_real  -> Humble-style: one .db3, no message_definitions / metadata tables, topics table
               without type_description_hash, schema_version 3 (readers use built-in types).
* arm_split -> Iron-style split set: two .db3 files (split at the middle timestamp), each with
               message_definitions, schema and metadata tables, as rosbags writes them.
Messages and timestamps are copied unchanged (sqlite3 has no publish time).
"""
import shutil
import sqlite3
import sys
from pathlib import Path

from rosbags.rosbag2 import Reader, StoragePlugin, Writer

src_root, dst_root = Path(sys.argv[1]), Path(sys.argv[2])


def copy(name: str) -> Path:
    dst = dst_root / name
    if dst.exists():
        shutil.rmtree(dst)
    with Reader(src_root / name) as r, Writer(dst, version=8, storage_plugin=StoragePlugin.SQLITE3) as w:
        conns = {}
        for c in sorted(r.connections, key=lambda c: c.id):
            conns[c.id] = w.add_connection(
                c.topic, c.msgtype, msgdef=c.msgdef.data, rihs01=c.digest or None,
                serialization_format=c.ext.serialization_format,
            )
        for c, t, data in r.messages():
            w.write(conns[c.id], t, data)
    return dst


def vacuum(db: Path):
    con = sqlite3.connect(db)
    con.execute("VACUUM")
    con.close()


# --- arm_real: strip to the Humble schema -------------------------------------------------
d = copy("arm_real")
db = next(d.glob("*.db3"))
con = sqlite3.connect(db)
con.executescript("""
DROP TABLE IF EXISTS message_definitions;
DROP TABLE IF EXISTS metadata;
DELETE FROM schema;
INSERT INTO schema VALUES (3, 'humble');
CREATE TABLE topics_h(id INTEGER PRIMARY KEY, name TEXT NOT NULL, type TEXT NOT NULL,
  serialization_format TEXT NOT NULL, offered_qos_profiles TEXT NOT NULL);
INSERT INTO topics_h SELECT id, name, type, serialization_format, offered_qos_profiles FROM topics;
DROP TABLE topics;
ALTER TABLE topics_h RENAME TO topics;
""")
con.commit()
con.close()
vacuum(db)

# --- arm_split: split into two files -------------------------------------------------------
d = copy("arm_split")
db = next(d.glob("*.db3"))
stem = db.stem
con = sqlite3.connect(db)
lo, hi = con.execute("SELECT MIN(timestamp), MAX(timestamp) FROM messages").fetchone()
con.close()
mid = (lo + hi) // 2
f0, f1 = d / f"{stem}_0.db3", d / f"{stem}_1.db3"
shutil.copy(db, f0)
shutil.copy(db, f1)
db.unlink()
counts = []
for f, cond in ((f0, "timestamp >= ?"), (f1, "timestamp < ?")):
    con = sqlite3.connect(f)
    con.execute(f"DELETE FROM messages WHERE {cond}", (mid,))
    con.commit()
    counts.append(con.execute("SELECT COUNT(*), MIN(timestamp), MAX(timestamp) FROM messages").fetchone())
    con.close()
    vacuum(f)
# metadata.yaml: list both files with their own counts and times.
from ruamel.yaml import YAML  # noqa: E402  (a dependency of rosbags)

y = YAML()
meta_path = d / "metadata.yaml"
meta = y.load(meta_path.read_text())
info = meta["rosbag2_bagfile_information"]
info["relative_file_paths"] = [f0.name, f1.name]
info["files"] = [
    {
        "path": f.name,
        "starting_time": {"nanoseconds_since_epoch": c[1]},
        "duration": {"nanoseconds": c[2] - c[1]},
        "message_count": c[0],
    }
    for f, c in ((f0, counts[0]), (f1, counts[1]))
]
with meta_path.open("w") as fh:
    y.dump(meta, fh)
