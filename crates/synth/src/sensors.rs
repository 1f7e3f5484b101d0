//! The sensor scenario: camera image + camera_info (identical stamps), a lidar and an IMU on
//! independent cadences, with stamp jitter, receive lag, optional bimodal image stamps (a driver
//! that stamps exposure end on every third frame) and seeded message faults.

use std::collections::BTreeMap;
use std::path::Path;

use bagscope_msg::encode_typed;
use bagscope_msg::types::{CameraInfo, Header, Image, Imu, PointCloud2, PointField, Time};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

use crate::arm::{period_ns, WALL_START_NS};
use crate::writer::{write_rosbag2, Message, TopicSpec};
use crate::SynthError;

/// Parameters of one sensor bag ([`generate`]); the default is the shipped `sensors`. All
/// stamps are on wall time; rates are Hz of that clock.
#[derive(Debug, Clone)]
pub struct SensorOptions {
    /// Bag name (default `sensors`): the bag goes to `DIR/NAME/NAME.mcap`.
    pub name: String,
    /// Seed of the random stream (default 2) that draws stamp jitter (camera ±0.3 ms, lidar
    /// ±0.5 ms, IMU ±0.2 ms) and receive-lag jitter.
    pub seed: u64,
    /// Length of the recording, wall seconds (default 20); it must hold more than 41 camera
    /// frames, the last contract fault being on frame 40.
    pub duration_s: f64,
    /// Every third image (frames 2, 5, 8, …) stamped this many seconds later, as a driver
    /// that stamps exposure end on those frames; `None` (the default) for a unimodal
    /// driver. The truth lists the frames in `bimodal_frames`.
    pub bimodal_offset_s: Option<f64>,
    /// Camera receive lag, log time − capture stamp, seconds in 0–5 (default 0.010; ±1 ms
    /// of jitter). Camera info arrives 0.2–0.5 ms after its image.
    pub image_lag_s: f64,
    /// Lidar receive lag, log time − stamp, seconds in 0–5 (default 0.090; ±2 ms of jitter).
    /// Its difference from `image_lag_s` sets the truth's `queue_rule_min`.
    pub lidar_lag_s: f64,
    /// `/camera/image_raw` and `/camera/camera_info` rate, Hz (default 20).
    pub camera_hz: f64,
    /// `/lidar/points` rate, Hz (default 10).
    pub lidar_hz: f64,
    /// `/imu/data` rate, Hz (default 100); received 2–2.5 ms after its stamp.
    pub imu_hz: f64,
    /// Seed the contract faults (default true): image 17 with too small a step, image 23
    /// with half its data, camera info 31 with `K[0] = 0`, camera info 40 in frame
    /// `camera_link`. The truth's `image_faults` and `camera_info_faults` list them.
    pub faults: bool,
    /// Zstd-compressed chunks (default true).
    pub zstd: bool,
    /// Optional TF (odom->base_link dynamic; base_link->camera_optical, lidar, imu static).
    pub tf: Option<crate::tf::TfSynth>,
}

impl Default for SensorOptions {
    fn default() -> Self {
        SensorOptions {
            name: "sensors".into(),
            seed: 2,
            duration_s: 20.0,
            bimodal_offset_s: None,
            image_lag_s: 0.010,
            lidar_lag_s: 0.090,
            camera_hz: 20.0,
            lidar_hz: 10.0,
            imu_hz: 100.0,
            faults: true,
            zstd: true,
            tf: None,
        }
    }
}

/// Images that break the `sensor_msgs/msg/Image` contract, as indices of
/// `/camera/image_raw` messages from 0 in the order published: what `check` must flag. Empty
/// without faults.
#[derive(Debug, Clone, Serialize)]
pub struct ImageFaults {
    /// Frames whose `step` is `width − 4` bytes, less than a mono8 row, with the data
    /// following that step.
    pub step_too_small: Vec<usize>,
    /// Frames whose data holds half of `height · step` bytes.
    pub data_size_mismatch: Vec<usize>,
}

/// Camera infos that break the contract, as indices of `/camera/camera_info` messages from 0
/// (one per image, same index): what `check` must flag. Empty without faults.
#[derive(Debug, Clone, Serialize)]
pub struct CameraInfoFaults {
    /// Messages whose `K[0]` (fx) is 0: an uncalibrated camera.
    pub uncalibrated_k0_zero: Vec<usize>,
    /// Messages in frame `camera_link` while their image is in `camera_optical`.
    pub frame_id_mismatch: Vec<usize>,
}

/// Ground truth of a sensor bag, written as `NAME.truth.json` beside it: what `info`, `sync`
/// and `check` must find.
#[derive(Debug, Clone, Serialize)]
pub struct SensorTruth {
    /// Always `"sensors"`: which truth format this is.
    pub kind: &'static str,
    /// The bag's folder name (and MCAP file stem), relative to the truth file.
    pub bag: String,
    /// Topic → nominal rate of its stamps, Hz.
    pub rates_hz: BTreeMap<String, f64>,
    /// Topic → number of messages written.
    pub counts: BTreeMap<String, u64>,
    /// Topic → nominal receive lag, log time − stamp, seconds (the camera image, from its
    /// capture, and the lidar).
    pub receive_lag_s: BTreeMap<String, f64>,
    /// Image and camera info: identical stamps, so an exact synchronizer pairs every frame.
    pub exact_pair: [String; 2],
    /// Image and lidar: independent cadences, the pair `sync --recommend` is tested on.
    pub approx_pair: [String; 2],
    /// Half the period of the faster of camera and lidar, seconds (25 ms by default): the
    /// slop a recommendation for `approx_pair` should come close to.
    pub approx_pair_half_fast_period_s: f64,
    /// ⌈|lidar lag − image lag| / faster period⌉, at least 1: the smallest queue that holds
    /// an image until its lidar partner arrives; a recommended queue must not be smaller.
    pub queue_rule_min: u32,
    /// Half the period of the faster of IMU and lidar, seconds: the same tolerance for an
    /// IMU–lidar pairing.
    pub imu_lidar_half_fast_period_s: f64,
    /// Images seeded with contract faults.
    pub image_faults: ImageFaults,
    /// Camera infos seeded with contract faults.
    pub camera_info_faults: CameraInfoFaults,
    /// Extra stamp offset of every third image, seconds; `null` for a unimodal driver.
    pub bimodal_offset_s: Option<f64>,
    /// Indices of the images stamped later by `bimodal_offset_s` (empty without it).
    pub bimodal_frames: Vec<usize>,
    /// The `bagscope synth` command line that writes this bag again.
    pub generator: String,
    /// The TF topics' truth, present only when TF is on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tf: Option<crate::tf::TfTruth>,
}

const W: u32 = 16;
const H: u32 = 12;

/// The camera's calibration for a frame with `header`; `uncalibrated`: K[0] = 0 (a contract
/// fault), `wrong_frame`: another frame id than the image's.
fn camera_info(header: Header, uncalibrated: bool, wrong_frame: bool) -> CameraInfo {
    let mut k9 = [
        400.0,
        0.0,
        W as f64 / 2.0,
        0.0,
        400.0,
        H as f64 / 2.0,
        0.0,
        0.0,
        1.0,
    ];
    if uncalibrated {
        k9[0] = 0.0;
    }
    let mut info_header = header;
    if wrong_frame {
        info_header.frame_id = "camera_link".into();
    }
    CameraInfo {
        header: info_header,
        height: H,
        width: W,
        distortion_model: "plumb_bob".into(),
        d: vec![0.0; 5],
        k: k9,
        r: [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0],
        p: [
            400.0,
            0.0,
            W as f64 / 2.0,
            0.0,
            0.0,
            400.0,
            H as f64 / 2.0,
            0.0,
            0.0,
            0.0,
            1.0,
            0.0,
        ],
        ..Default::default()
    }
}

/// The lidar's point clouds (topic 2), every `period_ns` over `dur_ns`; their count.
fn lidar(
    o: &SensorOptions,
    rng: &mut ChaCha8Rng,
    dur_ns: i64,
    period_ns: i64,
    msgs: &mut Vec<Message>,
) -> Result<i64, SynthError> {
    let n_lidar = dur_ns / period_ns;
    for k in 0..n_lidar {
        let stamp =
            WALL_START_NS + 23_000_000 + k * period_ns + rng.random_range(-500_000..500_000);
        let n_pts = 32u32;
        let pc = PointCloud2 {
            header: Header {
                stamp: Time::from_ns(stamp),
                frame_id: "lidar".into(),
            },
            height: 1,
            width: n_pts,
            fields: ["x", "y", "z", "intensity"]
                .iter()
                .enumerate()
                .map(|(i, n)| PointField {
                    name: (*n).into(),
                    offset: 4 * i as u32,
                    datatype: 7,
                    count: 1,
                })
                .collect(),
            is_bigendian: false,
            point_step: 16,
            row_step: 16 * n_pts,
            data: vec![0u8; (16 * n_pts) as usize],
            is_dense: true,
        };
        let log = stamp + (o.lidar_lag_s * 1e9) as i64 + rng.random_range(-2_000_000..2_000_000);
        msgs.push(Message {
            topic: 2,
            log_time_ns: log,
            publish_time_ns: log - 300_000,
            data: encode_typed(&pc)?,
        });
    }
    Ok(n_lidar)
}

/// Writes the sensor bag described by `o` into `dir/NAME/` and returns its truth (the caller
/// writes the truth file). Nothing is written when a parameter is out of range.
pub fn generate(dir: &Path, o: &SensorOptions) -> Result<SensorTruth, SynthError> {
    let mut rng = ChaCha8Rng::seed_from_u64(o.seed);
    let topics = vec![
        TopicSpec {
            name: "/camera/image_raw".into(),
            type_name: "sensor_msgs/msg/Image".into(),
        },
        TopicSpec {
            name: "/camera/camera_info".into(),
            type_name: "sensor_msgs/msg/CameraInfo".into(),
        },
        TopicSpec {
            name: "/lidar/points".into(),
            type_name: "sensor_msgs/msg/PointCloud2".into(),
        },
        TopicSpec {
            name: "/imu/data".into(),
            type_name: "sensor_msgs/msg/Imu".into(),
        },
    ];
    let cam_period_ns = period_ns(o.camera_hz, "camera_hz")?;
    let lidar_period_ns = period_ns(o.lidar_hz, "lidar_hz")?;
    let imu_period_ns = period_ns(o.imu_hz, "imu_hz")?;
    for (what, lag) in [("image", o.image_lag_s), ("lidar", o.lidar_lag_s)] {
        if !(lag.is_finite() && (0.0..=5.0).contains(&lag)) {
            return Err(SynthError::Param(format!(
                "the {what} receive lag must be within 0-5 s, got {lag}"
            )));
        }
    }
    let dur_ns = (o.duration_s * 1e9) as i64;
    if !(o.duration_s.is_finite() && dur_ns / cam_period_ns > 41) {
        // The contract faults sit on frames 17-40.
        return Err(SynthError::Param(format!(
            "a sensors bag needs more than 41 camera frames: {} s at {} Hz",
            o.duration_s, o.camera_hz
        )));
    }
    let mut msgs = Vec::new();
    let (step_bad, size_bad, k0_bad, frame_bad) = if o.faults {
        (vec![17usize], vec![23usize], vec![31usize], vec![40usize])
    } else {
        (vec![], vec![], vec![], vec![])
    };
    let mut bimodal_frames = Vec::new();
    let n_img = dur_ns / cam_period_ns;
    for k in 0..n_img {
        let ku = k as usize;
        let mut stamp =
            WALL_START_NS + 7_000_000 + k * cam_period_ns + rng.random_range(-300_000..300_000);
        let capture = stamp;
        if let Some(off) = o.bimodal_offset_s {
            if k % 3 == 2 {
                stamp += (off * 1e9) as i64;
                bimodal_frames.push(ku);
            }
        }
        let header = Header {
            stamp: Time::from_ns(stamp),
            frame_id: "camera_optical".into(),
        };
        let mut step = W;
        let mut data = vec![(k % 251) as u8; (W * H) as usize];
        if step_bad.contains(&ku) {
            // A driver bug: the step is wrong and the data follows the wrong step.
            step = W - 4;
            data.truncate((step * H) as usize);
        }
        if size_bad.contains(&ku) {
            data.truncate((W * H / 2) as usize);
        }
        let img = Image {
            header: header.clone(),
            height: H,
            width: W,
            encoding: "mono8".into(),
            is_bigendian: 0,
            step,
            data,
        };
        // Receive lag is counted from the capture, so a later stamp shows a smaller lag.
        let log = capture + (o.image_lag_s * 1e9) as i64 + rng.random_range(-1_000_000..1_000_000);
        msgs.push(Message {
            topic: 0,
            log_time_ns: log,
            publish_time_ns: log - 300_000,
            data: encode_typed(&img)?,
        });
        let info = camera_info(header, k0_bad.contains(&ku), frame_bad.contains(&ku));
        let log_i = log + 200_000 + rng.random_range(0..300_000);
        msgs.push(Message {
            topic: 1,
            log_time_ns: log_i,
            publish_time_ns: log_i - 300_000,
            data: encode_typed(&info)?,
        });
    }
    let n_lidar = lidar(o, &mut rng, dur_ns, lidar_period_ns, &mut msgs)?;
    let n_imu = dur_ns / imu_period_ns;
    for k in 0..n_imu {
        let stamp =
            WALL_START_NS + 3_000_000 + k * imu_period_ns + rng.random_range(-200_000..200_000);
        let imu = Imu {
            header: Header {
                stamp: Time::from_ns(stamp),
                frame_id: "imu".into(),
            },
            ..Default::default()
        };
        let log = stamp + 2_000_000 + rng.random_range(0..500_000);
        msgs.push(Message {
            topic: 3,
            log_time_ns: log,
            publish_time_ns: log - 100_000,
            data: encode_typed(&imu)?,
        });
    }
    let mut topics = topics;
    let tf = match &o.tf {
        Some(t) => Some(crate::tf::add_tf(
            t,
            &mut topics,
            &mut msgs,
            WALL_START_NS,
            WALL_START_NS + dur_ns + 200_000_000,
            1.0,
            &|w| w,
            ("odom", "base_link"),
            &[
                ("base_link", "camera_optical"),
                ("base_link", "imu"),
                ("base_link", "lidar"),
            ],
        )?),
        None => None,
    };
    write_rosbag2(&dir.join(&o.name), &o.name, &topics, msgs, o.zstd)?;

    let s = |x: &str| x.to_string();
    let mut rates_hz = BTreeMap::new();
    rates_hz.insert(s("/camera/image_raw"), o.camera_hz);
    rates_hz.insert(s("/camera/camera_info"), o.camera_hz);
    rates_hz.insert(s("/lidar/points"), o.lidar_hz);
    rates_hz.insert(s("/imu/data"), o.imu_hz);
    let mut counts = BTreeMap::new();
    counts.insert(s("/camera/image_raw"), n_img as u64);
    counts.insert(s("/camera/camera_info"), n_img as u64);
    counts.insert(s("/lidar/points"), n_lidar as u64);
    counts.insert(s("/imu/data"), n_imu as u64);
    let mut receive_lag_s = BTreeMap::new();
    receive_lag_s.insert(s("/camera/image_raw"), o.image_lag_s);
    receive_lag_s.insert(s("/lidar/points"), o.lidar_lag_s);
    // ⌈Δlag / T_fast⌉ with T_fast the faster of camera and lidar (50 ms, the camera, by
    // default).
    let t_fast_s = cam_period_ns.min(lidar_period_ns) as f64 / 1e9;
    let queue_rule_min = ((o.lidar_lag_s - o.image_lag_s).abs() / t_fast_s)
        .ceil()
        .max(1.0) as u32;
    Ok(SensorTruth {
        kind: "sensors",
        bag: o.name.clone(),
        rates_hz,
        counts,
        receive_lag_s,
        exact_pair: [s("/camera/image_raw"), s("/camera/camera_info")],
        approx_pair: [s("/camera/image_raw"), s("/lidar/points")],
        approx_pair_half_fast_period_s: t_fast_s / 2.0,
        queue_rule_min,
        imu_lidar_half_fast_period_s: imu_period_ns.min(lidar_period_ns) as f64 / 2e9,
        image_faults: ImageFaults {
            step_too_small: step_bad,
            data_size_mismatch: size_bad,
        },
        camera_info_faults: CameraInfoFaults {
            uncalibrated_k0_zero: k0_bad,
            frame_id_mismatch: frame_bad,
        },
        bimodal_offset_s: o.bimodal_offset_s,
        bimodal_frames,
        generator: format!("bagscope synth sensors --seed {}", o.seed),
        tf,
    })
}
