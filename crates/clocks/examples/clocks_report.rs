//! Print the clocks report of a JSON array of `TopicTimes` (development aid; file I/O lives here,
//! not in the library). Usage: `cargo run -p bagscope-clocks --example clocks_report -- FILE`.
use bagscope_clocks::{analyze, ClocksOptions, TopicTimes};

fn main() {
    let path = std::env::args()
        .nth(1)
        .expect("usage: clocks_report FILE.json");
    let text = std::fs::read_to_string(&path).expect("read input");
    let topics: Vec<TopicTimes> = serde_json::from_str(&text).expect("parse TopicTimes array");
    let report = analyze(&topics, &ClocksOptions::default());
    println!(
        "{}",
        serde_json::to_string_pretty(&report).expect("serialise")
    );
}
