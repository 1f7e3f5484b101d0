"""Receives what `bagscope play` publishes with CycloneDDS (the DDS of rmw_cyclonedds_cpp, ROS 2's
default on several distributions) and checks it against the bag: every /arm_cmd message,
decoded with a ROS 2 type definition declared here, equals the bag's message, in order; and
each carries a source timestamp (what rosbag2's recorder stores as the publish time) within a
few seconds of this receiver's wall clock, never decreasing.

usage: cyclonedds_receive.py BAG.mcap SECONDS

Run by tests/play.rs (`inner_cyclonedds_receives_what_play_sends`) inside the test's private
network namespace; prints "ready" once its reader exists, exits non-zero on any difference.
Needs the `cyclonedds` and `mcap` packages (.ci/run installs them into target/interop-venv).
"""
import sys, time
from dataclasses import dataclass
from cyclonedds.domain import DomainParticipant
from cyclonedds.topic import Topic
from cyclonedds.sub import DataReader
from cyclonedds.core import Qos, Policy
from cyclonedds.idl import IdlStruct
from cyclonedds.idl.types import int32, uint32, float64, sequence
from mcap.reader import make_reader


@dataclass
class Time_(IdlStruct, typename="builtin_interfaces::msg::dds_::Time_"):
    sec: int32
    nanosec: uint32


@dataclass
class Duration_(IdlStruct, typename="builtin_interfaces::msg::dds_::Duration_"):
    sec: int32
    nanosec: uint32


@dataclass
class Header_(IdlStruct, typename="std_msgs::msg::dds_::Header_"):
    stamp: Time_
    frame_id: str


@dataclass
class JointTrajectoryPoint_(IdlStruct, typename="trajectory_msgs::msg::dds_::JointTrajectoryPoint_"):
    positions: sequence[float64]
    velocities: sequence[float64]
    accelerations: sequence[float64]
    effort: sequence[float64]
    time_from_start: Duration_


@dataclass
class JointTrajectory_(IdlStruct, typename="trajectory_msgs::msg::dds_::JointTrajectory_"):
    header: Header_
    joint_names: sequence[str]
    points: sequence[JointTrajectoryPoint_]


bag, seconds = sys.argv[1], float(sys.argv[2])
want = []
with open(bag, "rb") as f:
    for _schema, channel, message in make_reader(f).iter_messages(topics=["/arm_cmd"]):
        want.append((message.log_time, JointTrajectory_.deserialize(message.data)))
want.sort(key=lambda m: m[0])
t0 = want[0][0]
want = [m for (t, m) in want if t <= t0 + int(seconds * 1e9)]

dp = DomainParticipant(0)
qos = Qos(Policy.Reliability.Reliable(max_blocking_time=1_000_000_000), Policy.History.KeepAll)
reader = DataReader(dp, Topic(dp, "rt/arm_cmd", JointTrajectory_), qos=qos)
print("ready", flush=True)
got = []
# (source timestamp, wall-clock time of reception) of each message, ns since the Unix epoch
times = []
deadline = time.time() + seconds + 30
while len(got) < len(want) and time.time() < deadline:
    # (take also returns instance-state notices, e.g. when the player leaves: not messages)
    for s in reader.take(N=100):
        if isinstance(s, JointTrajectory_):
            got.append(s)
            times.append((s.sample_info.source_timestamp, time.time_ns()))
    time.sleep(0.002)
print(f"received {len(got)} of {len(want)}", flush=True)
assert len(got) == len(want), "messages missing"
bad = [(i, src, rx) for i, (src, rx) in enumerate(times) if abs(rx - src) > 5_000_000_000]
print(f"first source timestamps: {[src for src, _ in times[:3]]}", flush=True)
assert not bad, f"source timestamps not within 5 s of reception (index, source, received): {bad[:5]}"
back = [i for i in range(1, len(times)) if times[i][0] < times[i - 1][0]]
assert not back, f"source timestamps decrease at messages {back[:5]}"
print("source timestamps within 5 s of reception, never decreasing", flush=True)
if got != want:
    gs = [(g.header.stamp.sec, g.header.stamp.nanosec) for g in got]
    ws = [(w.header.stamp.sec, w.header.stamp.nanosec) for w in want]
    print("first received stamps:", gs[:4], "first in bag:", ws[:4], flush=True)
    print("received but not in the bag window:", [s for s in gs if s not in ws][:5], flush=True)
for i, (g, w) in enumerate(zip(got, want)):
    assert g == w, f"message {i} differs:\n{g}\n{w}"
print("all equal to the bag, in order")
