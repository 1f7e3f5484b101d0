//! Reading ahead: a thread walks the bag (decompressing chunks), puts messages into schedule
//! order and hands them over through a queue bounded in bytes, so that I/O and decompression
//! never delay a publish and memory stays bounded whatever the bag's size.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use bagscope_bag::{Bag, Warning};
use bagscope_msg::StampLocator;

use crate::Order;

/// One message ready to play.
#[derive(Debug, Clone)]
pub struct Item {
    /// The message's topic, as an index into the bag's topics.
    pub topic: usize,
    /// The time that sets the schedule (log, publish or header stamp), ns.
    pub key_ns: i64,
    /// The recorder's receive time, ns.
    pub log_time_ns: i64,
    /// Which `--loop` pass it belongs to, from 0.
    pub loop_index: u32,
    /// The payload as recorded (CDR with its encapsulation header).
    pub data: Vec<u8>,
}

/// What the reader thread sends.
#[derive(Debug)]
pub enum Event {
    /// The next message in schedule order.
    Message(Item),
    /// The reader finished (end of bag, end of the window, or stopped); its warnings and
    /// counts.
    Done(ReadSummary),
}

/// What the reader met, handed over when it finishes.
#[derive(Debug, Default, Clone)]
pub struct ReadSummary {
    /// Damage found while reading.
    pub warnings: Vec<Warning>,
    /// Messages whose schedule time came more than the reorder window before one already
    /// handed over: played late, at once, in arrival order.
    pub out_of_order: u64,
    /// Per topic: messages without the wanted time, scheduled by log time instead.
    pub key_fallback: Vec<u64>,
}

/// A FIFO bounded by the bytes it holds (and always admitting one item, however large).
pub struct Queue {
    inner: Mutex<QueueState>,
    cv: Condvar,
    max_bytes: usize,
}

struct QueueState {
    items: VecDeque<Event>,
    bytes: usize,
    closed: bool,
}

fn event_bytes(e: &Event) -> usize {
    match e {
        Event::Message(m) => m.data.len() + 64,
        Event::Done(_) => 64,
    }
}

impl Queue {
    /// An open queue holding at most `max_bytes` of payload (plus 64 bytes an event).
    pub fn new(max_bytes: usize) -> Arc<Queue> {
        Arc::new(Queue {
            inner: Mutex::new(QueueState {
                items: VecDeque::new(),
                bytes: 0,
                closed: false,
            }),
            cv: Condvar::new(),
            max_bytes,
        })
    }

    /// Blocks while full; false once the consumer has closed the queue.
    pub fn push(&self, e: Event) -> bool {
        let n = event_bytes(&e);
        let Ok(mut g) = self.inner.lock() else {
            return false;
        };
        while !g.closed && !g.items.is_empty() && g.bytes + n > self.max_bytes {
            g = match self.cv.wait(g) {
                Ok(g) => g,
                Err(_) => return false,
            };
        }
        if g.closed {
            return false;
        }
        g.bytes += n;
        g.items.push_back(e);
        self.cv.notify_all();
        true
    }

    /// Blocks until an event arrives; `None` once closed.
    pub fn pop(&self) -> Option<Event> {
        let mut g = self.inner.lock().ok()?;
        loop {
            if let Some(e) = g.items.pop_front() {
                g.bytes -= event_bytes(&e);
                self.cv.notify_all();
                return Some(e);
            }
            if g.closed {
                return None;
            }
            g = self.cv.wait(g).ok()?;
        }
    }

    /// Wakes and releases the producer; later pushes fail.
    pub fn close(&self) {
        if let Ok(mut g) = self.inner.lock() {
            g.closed = true;
            g.items.clear();
            g.bytes = 0;
        }
        self.cv.notify_all();
    }
}

/// What to read.
pub struct ReadPlan {
    /// Per bag topic: whether it is played.
    pub wanted: Vec<bool>,
    /// Which time is each message's schedule key.
    pub order: Order,
    /// Per bag topic: where its header stamp is, for [`Order::Stamp`].
    pub locators: Vec<StampLocator>,
    /// Skip messages earlier than the first one's time plus this.
    pub start_offset_ns: i64,
    /// End a pass at messages later than its start plus this; None: the whole bag.
    pub duration_ns: Option<i64>,
    /// Read the bag again from the start after the end, until stopped.
    pub loops: bool,
    /// Messages are held this long (in schedule time) to put them in order.
    pub reorder_window_ns: i64,
    /// Also hand over once the held messages exceed this many bytes.
    pub reorder_max_bytes: usize,
}

enum Flow {
    Go,
    EndOfWindow,
    Closed,
}

/// Min-heap entry: (key, arrival sequence) so equal keys keep file order.
struct Held(Reverse<(i64, u64)>, Item);
impl PartialEq for Held {
    fn eq(&self, o: &Self) -> bool {
        self.0 == o.0
    }
}
impl Eq for Held {}
impl PartialOrd for Held {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Held {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        self.0.cmp(&o.0)
    }
}

/// A message's `header.stamp`, `None` where its type has none or it is zero (unset: common on
/// commands, where zero means "now").
fn stamp_key(plan: &ReadPlan, topic: usize, data: &[u8]) -> Option<i64> {
    plan.locators
        .get(topic)
        .and_then(|l| l.read_stamp_ns(data).ok().flatten())
        .filter(|&t| t != 0)
}

/// Messages the stamp pre-pass looks at before giving up (then messages without a stamp keep
/// their log time until the first stamped one): a bag whose stamps are all zero is not read
/// twice.
const PREPASS_MAX_MESSAGES: u64 = 100_000;

/// stamp − log time of the first selected message that has a stamp, among the first
/// [`PREPASS_MAX_MESSAGES`] of the topics whose type has one.
fn first_stamp_offset(bag: &Bag, plan: &ReadPlan, stop: &Stop) -> Option<i64> {
    let stamped: Vec<bool> = (0..plan.wanted.len())
        .map(|i| {
            plan.wanted[i]
                && plan
                    .locators
                    .get(i)
                    .is_some_and(|l| l.source() != bagscope_msg::StampSource::None)
        })
        .collect();
    if !stamped.contains(&true) {
        return None;
    }
    let halt = AtomicBool::new(false);
    let mut found = None;
    let mut seen = 0u64;
    let _ = bag.visit_until(&stamped, &halt, |m| {
        seen += 1;
        if found.is_some() || seen > PREPASS_MAX_MESSAGES || stop() {
            halt.store(true, Ordering::Relaxed);
            return;
        }
        if let Some(k) = stamp_key(plan, m.topic, m.data) {
            found = Some(k.saturating_sub(m.log_time_ns));
            halt.store(true, Ordering::Relaxed);
        }
    });
    found
}

/// Whether the reader should stop (the player finished, or the user stopped playback).
pub type Stop<'a> = dyn Fn() -> bool + Sync + 'a;

/// The read-ahead loop; runs on its own thread until the bag (or window) ends, `stop` is set
/// or the queue is closed. Always ends by pushing [`Event::Done`].
pub fn read(bag: &Bag, plan: &ReadPlan, queue: &Queue, stop: &Stop) {
    let mut summary = ReadSummary {
        key_fallback: vec![0; bag.topics.len()],
        ..Default::default()
    };
    // Schedule start: the first message's time (of the first pass) plus the offset.
    let mut t0: Option<i64> = None;
    let mut loop_index = 0u32;
    let halt = AtomicBool::new(false);
    let mut closed = false;
    // header.stamp and log time can be on different clocks (sim vs wall): a message without a
    // stamp is placed at its log time shifted by the stamp − log offset of the latest stamped
    // message, starting from the first stamped message's.
    let first_offset = match plan.order {
        Order::Stamp => first_stamp_offset(bag, plan, stop),
        _ => None,
    };
    loop {
        // Each pass starts from the bag's first offset, not from where the last pass ended.
        let mut stamp_minus_log = first_offset;
        let mut heap: BinaryHeap<Held> = BinaryHeap::new();
        let mut held_bytes = 0usize;
        let mut seq = 0u64;
        let mut last_out: Option<i64> = None;
        let mut emitted = 0u64;
        // Hands the earliest held message over, applying the window.
        let mut emit = |h: Held,
                        t0: &mut Option<i64>,
                        last_out: &mut Option<i64>,
                        summary: &mut ReadSummary|
         -> Flow {
            let item = h.1;
            let first = *t0.get_or_insert(item.key_ns);
            let begin = first.saturating_add(plan.start_offset_ns);
            // Before the window: skipped on purpose. Without a start offset a message keyed
            // before the first one is only late (out of order beyond the window) and is
            // played at once, counted below, never dropped.
            if item.key_ns < begin && plan.start_offset_ns > 0 {
                return Flow::Go;
            }
            if let Some(d) = plan.duration_ns {
                if item.key_ns > begin.saturating_add(d) {
                    return Flow::EndOfWindow;
                }
            }
            if last_out.is_some_and(|l| item.key_ns < l) {
                summary.out_of_order += 1;
            }
            *last_out = Some(last_out.map_or(item.key_ns, |l| l.max(item.key_ns)));
            if queue.push(Event::Message(item)) {
                emitted += 1;
                Flow::Go
            } else {
                Flow::Closed
            }
        };
        let mut warnings = bag.visit_until(&plan.wanted, &halt, |m| {
            if halt.load(Ordering::Relaxed) {
                return;
            }
            if stop() {
                halt.store(true, Ordering::Relaxed);
                return;
            }
            let key = match plan.order {
                Order::Log => Some(m.log_time_ns),
                Order::Publish => m.publish_time_ns.filter(|&t| t != 0),
                Order::Stamp => stamp_key(plan, m.topic, m.data),
            };
            if let (Order::Stamp, Some(k)) = (plan.order, key) {
                stamp_minus_log = Some(k.saturating_sub(m.log_time_ns));
            }
            let key_ns = key.unwrap_or_else(|| {
                summary.key_fallback[m.topic] += 1;
                m.log_time_ns.saturating_add(stamp_minus_log.unwrap_or(0))
            });
            let item = Item {
                topic: m.topic,
                key_ns,
                log_time_ns: m.log_time_ns,
                loop_index,
                data: m.data.to_vec(),
            };
            held_bytes += item.data.len();
            heap.push(Held(Reverse((key_ns, seq)), item));
            seq += 1;
            // Release what is older than the window behind the newest, or when too big.
            while let Some(top) = heap.peek() {
                let oldest = (top.0).0 .0;
                let newest_gap = key_ns.saturating_sub(oldest);
                if newest_gap <= plan.reorder_window_ns && held_bytes <= plan.reorder_max_bytes {
                    break;
                }
                let Some(h) = heap.pop() else { break };
                held_bytes -= h.1.data.len();
                match emit(h, &mut t0, &mut last_out, &mut summary) {
                    Flow::Go => {}
                    Flow::EndOfWindow => {
                        halt.store(true, Ordering::Relaxed);
                        break;
                    }
                    Flow::Closed => {
                        closed = true;
                        halt.store(true, Ordering::Relaxed);
                        break;
                    }
                }
            }
        });
        if !halt.load(Ordering::Relaxed) {
            while let Some(h) = heap.pop() {
                match emit(h, &mut t0, &mut last_out, &mut summary) {
                    Flow::Go => {}
                    Flow::EndOfWindow => break,
                    Flow::Closed => {
                        closed = true;
                        break;
                    }
                }
            }
        }
        summary.warnings.append(&mut warnings);
        let stopped = stop() || closed;
        // A pass that played nothing would loop forever without sleeping.
        if !plan.loops || stopped || emitted == 0 {
            break;
        }
        halt.store(false, Ordering::Relaxed);
        loop_index += 1;
    }
    summary.warnings.sort();
    summary.warnings.dedup();
    if !closed {
        queue.push(Event::Done(summary));
    }
}
