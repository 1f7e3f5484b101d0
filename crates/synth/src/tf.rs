//! Optional TF for the arm and sensor scenarios: a dynamic edge at a chosen rate on a chosen TF
//! topic, plus latched static edges on `/tf_static`. Generated without the scenario's random
//! stream, so the other topics are byte-for-byte those of the TF-less scenario (apart from
//! frame ids the arm scenario sets only when TF is on).

use bagscope_msg::encode_typed;
use bagscope_msg::types::{Header, TFMessage, Time, Transform, TransformStamped};
use serde::Serialize;

use crate::writer::{Message, TopicSpec};
use crate::SynthError;

/// TF to add to an arm or sensor bag (`ArmOptions::tf`, `SensorOptions::tf`): one dynamic
/// edge (odom->base_link) stamped on the scenario's clock, and its static edges in one
/// message at the bag's start.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TfSynth {
    /// Rate of the dynamic edge, Hz of the stamps' clock (the joint states' clock for arms,
    /// wall for sensors), in (0, 10000].
    pub rate_hz: f64,
    /// Topic of the dynamic edge (`/tf`, or a namespaced one such as `/robot/tf`).
    pub topic: String,
    /// Topic of the static edges (default `/tf_static`); must differ from `topic`.
    pub static_topic: String,
    /// Receive lag of each dynamic TF message, wall seconds from the tick it is stamped at
    /// to its log time (default 0.001); the static message is logged at the bag's start.
    pub lag_s: f64,
}

impl TfSynth {
    /// TF at `rate_hz` on `/tf`, statics on `/tf_static`, received 1 ms after each tick.
    pub fn new(rate_hz: f64) -> TfSynth {
        TfSynth {
            rate_hz,
            topic: "/tf".into(),
            static_topic: "/tf_static".into(),
            lag_s: 0.001,
        }
    }
}

/// Ground truth of the TF part (the truth file's `tf` section): what `tf` must find.
#[derive(Debug, Clone, Serialize)]
pub struct TfTruth {
    /// Topic of the dynamic edge.
    pub topic: String,
    /// Topic of the static edges (one message).
    pub static_topic: String,
    /// Rate of the dynamic edge, Hz of its stamps' clock.
    pub rate_hz: f64,
    /// Receive lag of each dynamic message, wall seconds from its tick to its log time.
    pub lag_s: f64,
    /// [parent, child] of the dynamic edge.
    pub dynamic_edge: [String; 2],
    /// [parent, child] of each static edge, in the order the static message lists them.
    pub static_edges: Vec<[String; 2]>,
    /// Number of dynamic-edge messages written (the single static message not counted).
    pub messages: u64,
}

pub(crate) fn tf_msg(edges: &[(&str, &str)], stamp: i64) -> Result<Vec<u8>, SynthError> {
    Ok(encode_typed(&TFMessage {
        transforms: edges
            .iter()
            .map(|(p, c)| TransformStamped {
                header: Header {
                    stamp: Time::from_ns(stamp),
                    frame_id: (*p).into(),
                },
                child_frame_id: (*c).into(),
                transform: Transform::default(),
            })
            .collect(),
    })?)
}

/// Appends the TF topics (after the scenario's, so their indices are unchanged) and messages.
/// `stamp_of(wall)` maps a wall tick to the stamps' clock; ticks run from `start` to `end`
/// (wall ns) every 1/rate of that clock (`clock_rate` = clock seconds per wall second).
#[allow(clippy::too_many_arguments)]
pub(crate) fn add_tf(
    o: &TfSynth,
    topics: &mut Vec<TopicSpec>,
    msgs: &mut Vec<Message>,
    start: i64,
    end: i64,
    clock_rate: f64,
    stamp_of: &dyn Fn(i64) -> i64,
    dynamic: (&str, &str),
    statics: &[(&str, &str)],
) -> Result<TfTruth, SynthError> {
    if !(o.rate_hz.is_finite() && o.rate_hz > 0.0 && o.rate_hz <= 10_000.0) {
        return Err(SynthError::Param(format!("TF rate {} Hz", o.rate_hz)));
    }
    if o.topic == o.static_topic {
        return Err(SynthError::Param(
            "TF topic equals the static TF topic".into(),
        ));
    }
    let ti = topics.len();
    topics.push(TopicSpec {
        name: o.topic.clone(),
        type_name: "tf2_msgs/msg/TFMessage".into(),
    });
    topics.push(TopicSpec {
        name: o.static_topic.clone(),
        type_name: "tf2_msgs/msg/TFMessage".into(),
    });
    let lag = (o.lag_s * 1e9) as i64;
    msgs.push(Message {
        topic: ti + 1,
        log_time_ns: start,
        publish_time_ns: start,
        data: tf_msg(statics, stamp_of(start))?,
    });
    let period = (1e9 / o.rate_hz / clock_rate.max(1e-6)) as i64;
    let mut n = 0u64;
    let mut wall = start;
    while wall <= end {
        let log = wall + lag;
        msgs.push(Message {
            topic: ti,
            log_time_ns: log,
            publish_time_ns: log,
            data: tf_msg(&[dynamic], stamp_of(wall))?,
        });
        n += 1;
        wall += period.max(1);
    }
    Ok(TfTruth {
        topic: o.topic.clone(),
        static_topic: o.static_topic.clone(),
        rate_hz: o.rate_hz,
        lag_s: o.lag_s,
        dynamic_edge: [dynamic.0.into(), dynamic.1.into()],
        static_edges: statics
            .iter()
            .map(|(p, c)| [(*p).into(), (*c).into()])
            .collect(),
        messages: n,
    })
}
