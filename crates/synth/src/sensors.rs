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

#[derive(Debug, Clone)]
pub struct SensorOptions {
    pub name: String,
    pub seed: u64,
    pub duration_s: f64,
    /// Every third image stamped this much later (exposure end); `None` for a unimodal driver.
    pub bimodal_offset_s: Option<f64>,
    pub image_lag_s: f64,
    pub lidar_lag_s: f64,
    /// Camera image (and camera info) rate.
    pub camera_hz: f64,
    pub lidar_hz: f64,
    pub imu_hz: f64,
    /// Seed the contract faults (bad step, bad data size, uncalibrated K, wrong frame).
    pub faults: bool,
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

#[derive(Debug, Clone, Serialize)]
pub struct ImageFaults {
    pub step_too_small: Vec<usize>,
    pub data_size_mismatch: Vec<usize>,
}

#[derive(Debug, Clone, Serialize)]
pub struct CameraInfoFaults {
    pub uncalibrated_k0_zero: Vec<usize>,
    pub frame_id_mismatch: Vec<usize>,
}

#[derive(Debug, Clone, Serialize)]
pub struct SensorTruth {
    pub kind: &'static str,
    pub bag: String,
    pub rates_hz: BTreeMap<String, f64>,
    pub counts: BTreeMap<String, u64>,
    pub receive_lag_s: BTreeMap<String, f64>,
    pub exact_pair: [String; 2],
    pub approx_pair: [String; 2],
    pub approx_pair_half_fast_period_s: f64,
    pub queue_rule_min: u32,
    pub imu_lidar_half_fast_period_s: f64,
    pub image_faults: ImageFaults,
    pub camera_info_faults: CameraInfoFaults,
    pub bimodal_offset_s: Option<f64>,
    pub bimodal_frames: Vec<usize>,
    pub generator: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tf: Option<crate::tf::TfTruth>,
}

const W: u32 = 16;
const H: u32 = 12;

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
        if k0_bad.contains(&ku) {
            k9[0] = 0.0;
        }
        let mut info_header = header;
        if frame_bad.contains(&ku) {
            info_header.frame_id = "camera_link".into();
        }
        let info = CameraInfo {
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
        };
        let log_i = log + 200_000 + rng.random_range(0..300_000);
        msgs.push(Message {
            topic: 1,
            log_time_ns: log_i,
            publish_time_ns: log_i - 300_000,
            data: encode_typed(&info)?,
        });
    }
    let n_lidar = dur_ns / lidar_period_ns;
    for k in 0..n_lidar {
        let stamp =
            WALL_START_NS + 23_000_000 + k * lidar_period_ns + rng.random_range(-500_000..500_000);
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
