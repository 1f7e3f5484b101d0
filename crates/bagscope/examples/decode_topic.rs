//! The floor for `export` of a JointState topic: decode every message of the topic into the
//! typed `JointState` (names, positions, velocities, efforts) on all cores, and nothing else.
//! Used by `bench/speed.sh` as the measure export is compared with.
//!
//! usage: cargo run --release -p bagscope --example decode_topic -- BAG TOPIC

use bagscope_msg::types::JointState;

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().expect("usage: decode_topic BAG TOPIC");
    let topic = args.next().expect("usage: decode_topic BAG TOPIC");
    let bag = bagscope::io::Bag::open(std::path::Path::new(&path)).expect("open");
    let ti = bag.topic_index(&topic).expect("topic");
    let mut wanted = vec![false; bag.topics.len()];
    wanted[ti] = true;
    // One value per message (the joints it holds), so that nothing is optimised away.
    let (cols, _) = bag.scan_columns(&wanted, |m| {
        match bagscope_msg::decode_typed::<JointState>(m.data) {
            Ok(v) => [(v.name.len() + v.position.len() + v.velocity.len() + v.effort.len()) as i64],
            Err(_) => [-1],
        }
    });
    let [values] = &cols[ti].values;
    let total: i64 = values.iter().filter(|&&v| v >= 0).sum();
    println!("{} messages decoded, {total} values", values.len());
}
