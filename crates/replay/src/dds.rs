//! The DDS side: ROS 2 naming, raw-CDR writers that send each recorded payload unchanged, the
//! `/clock` publisher, and raw readers (for `--follow-clock` and for tests that receive what
//! was played).
//!
//! ROS 2 maps topic `/a/b` of type `pkg/msg/T` to DDS topic `rt/a/b` of type
//! `pkg::msg::dds_::T_`; matching on those two strings is what makes a ROS 2 node see us.

use std::net::{Ipv4Addr, UdpSocket};
use std::time::Duration;

use bytes::Bytes;
use rustdds::no_key::{DataReader, DataWriter, DeserializerAdapter, SerializerAdapter};
use rustdds::policy::{
    Deadline, Durability as DdsDurability, History as DdsHistory, Lifespan,
    Liveliness as DdsLiveliness, Reliability as DdsRel,
};
use rustdds::{
    DataWriterStatus, DomainParticipant, DomainParticipantBuilder, Publisher, QosPolicies,
    QosPolicyBuilder, RTPSEntity, RepresentationIdentifier, StatusEvented, Subscriber, Timestamp,
    Topic, TopicKind, WriteOptionsBuilder,
};

use crate::qos::{Durability, History, Liveliness, Reliability, TopicQos};

use crate::wire::SampleId;
use crate::ReplayError;
/// The DDS stack, for callers that set DDS QoS themselves.
pub use rustdds;

/// A recorded CDR message split at its 4-byte encapsulation header: RTPS carries the header's
/// representation identifier separately from the body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawCdr {
    /// The encapsulation's representation identifier (`00 01` little-endian CDR, `00 00`
    /// big-endian).
    pub representation: [u8; 2],
    /// The serialized message after the 4-byte encapsulation header.
    pub body: Bytes,
}

impl RawCdr {
    /// The message as rosbag2 stores it: encapsulation header (options zero) then body.
    pub fn to_stored(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(4 + self.body.len());
        v.extend_from_slice(&self.representation);
        v.extend_from_slice(&[0, 0]);
        v.extend_from_slice(&self.body);
        v
    }
}

/// The (de)serializer error type RustDDS asks for; passing raw bytes through never fails.
#[derive(Debug, thiserror::Error)]
#[error("raw CDR: {0}")]
pub struct RawError(String);

/// Serializer for little-endian CDR payloads: the body is sent as recorded.
pub struct RawLe;
/// Serializer for big-endian CDR payloads.
pub struct RawBe;

impl SerializerAdapter<RawCdr> for RawLe {
    type Error = RawError;
    fn output_encoding() -> RepresentationIdentifier {
        RepresentationIdentifier::CDR_LE
    }
    fn to_bytes(value: &RawCdr) -> Result<Bytes, RawError> {
        Ok(value.body.clone())
    }
}

impl SerializerAdapter<RawCdr> for RawBe {
    type Error = RawError;
    fn output_encoding() -> RepresentationIdentifier {
        RepresentationIdentifier::CDR_BE
    }
    fn to_bytes(value: &RawCdr) -> Result<Bytes, RawError> {
        Ok(value.body.clone())
    }
}

/// Deserializer that keeps the bytes: receivers see exactly what was sent.
pub struct RawIn;

/// [`RawIn`]'s decoder: copies the received body with its representation identifier.
#[derive(Clone, Copy)]
pub struct RawDecoder;

impl<'de> rustdds::no_key::Decode<'de, RawCdr> for RawDecoder {
    type Error = RawError;
    fn decode_bytes(
        self,
        input_bytes: &'de [u8],
        encoding: RepresentationIdentifier,
    ) -> Result<RawCdr, RawError> {
        Ok(RawCdr {
            representation: encoding.to_bytes(),
            body: Bytes::copy_from_slice(input_bytes),
        })
    }
}

impl DeserializerAdapter<RawCdr> for RawIn {
    type Error = RawError;
    type Decoded = RawCdr;
    fn supported_encodings() -> &'static [RepresentationIdentifier] {
        &[
            RepresentationIdentifier::CDR_LE,
            RepresentationIdentifier::CDR_BE,
        ]
    }
    fn transform_decoded(decoded: RawCdr) -> RawCdr {
        decoded
    }
}

impl rustdds::no_key::DefaultDecoder<RawCdr> for RawIn {
    type Decoder = RawDecoder;
    const DECODER: RawDecoder = RawDecoder;
}

/// `/a/b` → `rt/a/b` (ROS 2 topic prefix for topics).
pub fn dds_topic_name(ros_topic: &str) -> String {
    format!("rt/{}", ros_topic.trim_start_matches('/'))
}

/// `pkg/msg/T` → `pkg::msg::dds_::T_`. Types without the `msg` part (`pkg/T`) get it.
pub fn dds_type_name(ros_type: &str) -> String {
    let parts: Vec<&str> = ros_type.split('/').filter(|s| !s.is_empty()).collect();
    match parts.as_slice() {
        [pkg, kind, name] => format!("{pkg}::{kind}::dds_::{name}_"),
        [pkg, name] => format!("{pkg}::msg::dds_::{name}_"),
        _ => ros_type.to_string(),
    }
}

/// A ROS 2 QoS profile as RustDDS policies (durations beyond RustDDS's range sent as
/// infinite).
pub fn to_dds_qos(q: &TopicQos) -> QosPolicies {
    // RustDDS keeps whole seconds in an i32: longer durations are sent as infinite.
    let d = |ns: Option<i64>| match ns {
        Some(ns) if ns < i32::MAX as i64 * 1_000_000_000 => rustdds::Duration::from_nanos(ns),
        _ => rustdds::Duration::INFINITE,
    };
    let lease_duration = d(q.liveliness_lease_ns);
    let mut b = QosPolicyBuilder::new()
        .reliability(match q.reliability {
            Reliability::Reliable => DdsRel::Reliable {
                max_blocking_time: rustdds::Duration::from_millis(100),
            },
            Reliability::BestEffort => DdsRel::BestEffort,
        })
        .durability(match q.durability {
            Durability::Volatile => DdsDurability::Volatile,
            Durability::TransientLocal => DdsDurability::TransientLocal,
        })
        .history(match q.history {
            History::KeepLast(d) => DdsHistory::KeepLast {
                depth: i32::try_from(d.max(1)).unwrap_or(i32::MAX),
            },
            History::KeepAll => DdsHistory::KeepAll,
        })
        // Offered as recorded: a subscriber that requests a deadline or a liveliness lease
        // matches only an offer at least as strict.
        .liveliness(match q.liveliness {
            Liveliness::Automatic => DdsLiveliness::Automatic { lease_duration },
            Liveliness::ManualByNode => DdsLiveliness::ManualByParticipant { lease_duration },
            Liveliness::ManualByTopic => DdsLiveliness::ManualByTopic { lease_duration },
        });
    if q.deadline_ns.is_some() {
        b = b.deadline(Deadline(d(q.deadline_ns)));
    }
    if q.lifespan_ns.is_some() {
        b = b.lifespan(Lifespan {
            duration: d(q.lifespan_ns),
        });
    }
    b.build()
}

fn dds_err(what: &str, e: impl std::fmt::Debug) -> ReplayError {
    ReplayError::Dds(format!("{what}: {e:?}"))
}

/// How far DDS discovery and traffic reach: ROS 2's `ROS_AUTOMATIC_DISCOVERY_RANGE` (`OFF`
/// has no equivalent here: a player nobody can discover is refused by the CLI).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DiscoveryRange {
    /// Every interface (ROS 2's default, `SUBNET`).
    #[default]
    Subnet,
    /// Loopback only (`LOCALHOST`, or the older `ROS_LOCALHOST_ONLY=1`): discovery and data
    /// are announced, joined and sent on 127.0.0.1 alone.
    Localhost,
}

/// One DDS participant with a publisher and a subscriber.
pub struct Node {
    /// The participant itself, for callers that need more than this wrapper gives.
    pub participant: DomainParticipant,
    publisher: Publisher,
    subscriber: Subscriber,
}

impl Node {
    /// A participant on every interface.
    pub fn new(domain_id: u16) -> Result<Node, ReplayError> {
        Node::with_range(domain_id, DiscoveryRange::Subnet)
    }

    /// A participant whose discovery and traffic stay within `range`.
    ///
    /// For [`DiscoveryRange::Localhost`], RustDDS is given 127.0.0.1 as its only network: it
    /// advertises only loopback locators, joins multicast and sends multicast only on
    /// interfaces with that address, and finds same-host peers by unicast to 127.0.0.1 at the
    /// well-known discovery ports. Its receive sockets still bind the wildcard address
    /// (RustDDS 0.15 has no option to bind them elsewhere), but nothing is announced or sent
    /// off loopback, so no remote peer learns of them.
    pub fn with_range(domain_id: u16, range: DiscoveryRange) -> Result<Node, ReplayError> {
        if domain_id > 232 {
            // Port arithmetic of the RTPS spec overflows beyond this (as ROS 2 documents).
            return Err(ReplayError::Usage(format!(
                "--domain-id {domain_id}: ROS 2 domain ids are 0..=232"
            )));
        }
        let mut builder = DomainParticipantBuilder::new(domain_id);
        if range == DiscoveryRange::Localhost {
            // Without a usable 127.0.0.1 the filter matches nothing and the participant would
            // be invisible: refuse rather than play to nobody.
            UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).map_err(|e| {
                ReplayError::Dds(format!(
                    "localhost-only discovery was asked for, but 127.0.0.1 cannot be used \
                     (is the loopback interface up?): {e}"
                ))
            })?;
            builder = builder
                .with_only_networks([Ipv4Addr::LOCALHOST])
                .same_host_loopback(true);
        }
        let participant = builder
            .build()
            .map_err(|e| dds_err("creating the DDS participant", e))?;
        let qos = QosPolicyBuilder::new().build();
        let publisher = participant
            .create_publisher(&qos)
            .map_err(|e| dds_err("creating a publisher", e))?;
        let subscriber = participant
            .create_subscriber(&qos)
            .map_err(|e| dds_err("creating a subscriber", e))?;
        Ok(Node {
            participant,
            publisher,
            subscriber,
        })
    }

    fn topic(
        &self,
        ros_topic: &str,
        ros_type: &str,
        qos: &QosPolicies,
    ) -> Result<Topic, ReplayError> {
        self.participant
            .create_topic(
                dds_topic_name(ros_topic),
                dds_type_name(ros_type),
                qos,
                TopicKind::NoKey,
            )
            .map_err(|e| dds_err(&format!("creating topic {ros_topic}"), e))
    }

    /// A writer that publishes recorded payloads of `ros_type` on `ros_topic`.
    pub fn writer(
        &self,
        ros_topic: &str,
        ros_type: &str,
        qos: &TopicQos,
    ) -> Result<RawWriter, ReplayError> {
        let q = to_dds_qos(qos);
        let topic = self.topic(ros_topic, ros_type, &q)?;
        let le = self
            .publisher
            .create_datawriter_no_key::<RawCdr, RawLe>(&topic, Some(q.clone()))
            .map_err(|e| dds_err(&format!("creating a writer for {ros_topic}"), e))?;
        Ok(RawWriter {
            le,
            be: None,
            topic,
            qos: q,
            matched: 0,
        })
    }

    /// A reader that receives raw payloads of `ros_type` on `ros_topic`.
    pub fn reader(
        &self,
        ros_topic: &str,
        ros_type: &str,
        qos: &TopicQos,
    ) -> Result<DataReader<RawCdr, RawIn>, ReplayError> {
        self.reader_with_qos(ros_topic, ros_type, to_dds_qos(qos))
    }

    /// As [`Node::reader`], with the DDS QoS given directly (tests check the player's QoS
    /// mapping against readers that do not go through it).
    pub fn reader_with_qos(
        &self,
        ros_topic: &str,
        ros_type: &str,
        q: QosPolicies,
    ) -> Result<DataReader<RawCdr, RawIn>, ReplayError> {
        let topic = self.topic(ros_topic, ros_type, &q)?;
        self.subscriber
            .create_datareader_no_key::<RawCdr, RawIn>(&topic, Some(q))
            .map_err(|e| dds_err(&format!("creating a reader for {ros_topic}"), e))
    }

    /// The participant's publisher, which [`RawWriter::send`] writes through.
    pub fn publisher(&self) -> &Publisher {
        &self.publisher
    }

    /// The participant's GUID prefix: the first 12 bytes of every GUID it sends.
    pub fn guid_prefix(&self) -> [u8; 12] {
        let mut p = [0u8; 12];
        p.copy_from_slice(&self.participant.guid().to_bytes()[..12]);
        p
    }
}

/// A reader of raw payloads (what [`Node::reader`] returns).
pub type RawReader = DataReader<RawCdr, RawIn>;

/// Writer for one topic; big-endian payloads (rare) go through a second writer made on demand.
pub struct RawWriter {
    le: DataWriter<RawCdr, RawLe>,
    be: Option<DataWriter<RawCdr, RawBe>>,
    topic: Topic,
    qos: QosPolicies,
    matched: usize,
}

/// Why a payload could not be sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SendError {
    /// Not plain CDR (e.g. XCDR2): not sent.
    Encapsulation([u8; 2]),
    /// The DDS writer refused the sample; RustDDS's reason.
    Write(String),
}

impl RawWriter {
    /// Readers matched now (from the writer's publication-matched events).
    pub fn matched_subscriptions(&mut self) -> usize {
        while let Some(st) = self.le.try_recv_status() {
            if let DataWriterStatus::PublicationMatched { current, .. } = st {
                self.matched = current.count().max(0) as usize;
            }
        }
        self.matched
    }

    /// Sends one stored payload (encapsulation header included), with the wall-clock time of
    /// the send as its source timestamp (an INFO_TS before the DATA): readers such as
    /// rosbag2's recorder take it as the message's publish time.
    pub fn send(&mut self, publisher: &Publisher, stored: &[u8]) -> Result<(), SendError> {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as i64);
        self.send_stamped(publisher, stored, now).map(|_| ())
    }

    /// As [`RawWriter::send`], with `source_unix_ns` (ns since the epoch) as the source
    /// timestamp; returns the sample's writer GUID and sequence number, which the RTPS DATA
    /// that carries it names (see [`crate::wire`]).
    pub fn send_stamped(
        &mut self,
        publisher: &Publisher,
        stored: &[u8],
        source_unix_ns: i64,
    ) -> Result<SampleId, SendError> {
        if stored.len() < 4 {
            return Err(SendError::Write(format!(
                "payload of {} bytes has no CDR header",
                stored.len()
            )));
        }
        let rep = [stored[0], stored[1]];
        let msg = RawCdr {
            representation: rep,
            body: Bytes::copy_from_slice(&stored[4..]),
        };
        let options = WriteOptionsBuilder::new()
            .source_timestamp(rtps_timestamp(source_unix_ns))
            .build();
        let written = match rep {
            [0x00, 0x01] => self
                .le
                .write_with_options(msg, options)
                .map_err(|e| SendError::Write(format!("{e:?}"))),
            [0x00, 0x00] => {
                if self.be.is_none() {
                    let w = publisher
                        .create_datawriter_no_key::<RawCdr, RawBe>(
                            &self.topic,
                            Some(self.qos.clone()),
                        )
                        .map_err(|e| SendError::Write(format!("{e:?}")))?;
                    self.be = Some(w);
                }
                match &self.be {
                    Some(w) => w
                        .write_with_options(msg, options)
                        .map_err(|e| SendError::Write(format!("{e:?}"))),
                    None => Err(SendError::Write("no big-endian writer".into())),
                }
            }
            other => Err(SendError::Encapsulation(other)),
        }?;
        Ok(SampleId {
            writer: written.writer_guid.to_bytes(),
            sn: i64::from(written.sequence_number),
        })
    }

    /// For reliable writers: waits until every matched reader acknowledged what was sent.
    pub fn wait_for_acks(&self, max_wait: Duration) -> bool {
        let ok = self.le.wait_for_acknowledgments(max_wait).unwrap_or(false);
        match &self.be {
            Some(b) => ok && b.wait_for_acknowledgments(max_wait).unwrap_or(false),
            None => ok,
        }
    }
}

/// RTPS time (seconds and 2^-32 fractions since the epoch) of `unix_ns`; times before the
/// epoch are sent as the epoch.
pub fn rtps_timestamp(unix_ns: i64) -> Timestamp {
    let ns = unix_ns.max(0) as u64;
    let sec = ns / 1_000_000_000;
    let frac = ((ns % 1_000_000_000) << 32) / 1_000_000_000;
    Timestamp::from_ticks((sec << 32) | frac)
}

/// `builtin_interfaces/Time` as little-endian CDR with its header: the whole of a
/// `rosgraph_msgs/msg/Clock`.
pub fn clock_payload(t_ns: i64) -> [u8; 12] {
    let sec = t_ns.div_euclid(1_000_000_000) as i32;
    let nsec = t_ns.rem_euclid(1_000_000_000) as u32;
    let mut b = [0u8; 12];
    b[1] = 0x01;
    b[4..8].copy_from_slice(&sec.to_le_bytes());
    b[8..12].copy_from_slice(&nsec.to_le_bytes());
    b
}

/// Reads a `rosgraph_msgs/msg/Clock` payload (either byte order).
pub fn parse_clock(m: &RawCdr) -> Option<i64> {
    let b = &m.body;
    if b.len() < 8 {
        return None;
    }
    let (sec, nsec) = match m.representation {
        [0x00, 0x01] => (
            i32::from_le_bytes(b[0..4].try_into().ok()?),
            u32::from_le_bytes(b[4..8].try_into().ok()?),
        ),
        [0x00, 0x00] => (
            i32::from_be_bytes(b[0..4].try_into().ok()?),
            u32::from_be_bytes(b[4..8].try_into().ok()?),
        ),
        _ => return None,
    };
    Some(sec as i64 * 1_000_000_000 + nsec as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ros2_names() {
        assert_eq!(dds_topic_name("/arm_cmd"), "rt/arm_cmd");
        assert_eq!(dds_topic_name("/a/b"), "rt/a/b");
        assert_eq!(
            dds_type_name("trajectory_msgs/msg/JointTrajectory"),
            "trajectory_msgs::msg::dds_::JointTrajectory_"
        );
        assert_eq!(
            dds_type_name("std_msgs/String"),
            "std_msgs::msg::dds_::String_"
        );
    }

    #[test]
    fn clock_round_trip() {
        for t in [0i64, 1, 1_500_000_000, -1, 1_764_460_800_123_456_789] {
            let p = clock_payload(t);
            let raw = RawCdr {
                representation: [p[0], p[1]],
                body: Bytes::copy_from_slice(&p[4..]),
            };
            assert_eq!(parse_clock(&raw), Some(t));
            assert_eq!(raw.to_stored(), p.to_vec());
        }
    }
}
