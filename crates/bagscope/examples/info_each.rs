//! The floor for `batch`: `info` of every bag given, one after the other in one process (no
//! start-up cost per bag beyond opening it). Used by `bench/speed.sh`.
//!
//! usage: cargo run --release -p bagscope --example info_each -- BAG...   (or a file of bag
//! paths, one a line, as `@LIST`)

fn main() {
    let mut bags: Vec<String> = Vec::new();
    for a in std::env::args().skip(1) {
        match a.strip_prefix('@') {
            Some(list) => bags.extend(
                std::fs::read_to_string(list)
                    .expect("list")
                    .lines()
                    .filter(|l| !l.is_empty())
                    .map(str::to_string),
            ),
            None => bags.push(a),
        }
    }
    let mut messages = 0u64;
    let mut failed = 0usize;
    for b in &bags {
        match bagscope::info::info(std::path::Path::new(b)) {
            Ok(r) => messages += r.message_count,
            Err(_) => failed += 1,
        }
    }
    println!("{} bags, {messages} messages, {failed} failed", bags.len());
}
