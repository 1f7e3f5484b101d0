//! When each published message left the host, as opposed to when the player handed it to DDS.
//!
//! `timing_error` is taken at the hand-off: `DataWriter::write` only queues the sample, and
//! RustDDS's event-loop thread wakes up, builds the RTPS message and sends it a little later.
//! To see that delay the player captures its own outgoing packets: an `AF_PACKET` socket
//! (which needs root or `CAP_NET_RAW`) on every interface, kept by a kernel filter to outgoing
//! UDP datagrams that start with the RTPS magic, each with the kernel's timestamp of when it
//! passed to the interface (`SO_TIMESTAMPNS`, on `CLOCK_REALTIME`). Each DATA or DATA_FRAG
//! submessage names its writer (the message's GUID prefix and the submessage's writer entity
//! id) and the sample's sequence number, which is what `write` returned for it: the two meet
//! in a [`Matcher`]. A sample has left when its first packet left; a fragmented one when every
//! fragment has left once. Where capture is not permitted nothing is invented: the report
//! says why the wire was not measured.
//!
//! The wire format is RTPS 2.x (OMG DDSI-RTPS, section 9.4): a 20-byte header (`RTPS`,
//! version, vendor, 12-byte GUID prefix), then submessages of a 4-byte header (id, flags whose
//! bit 0 says little-endian, length to the next header) and a body.

use std::collections::HashMap;

/// A writer's GUID as RTPS sends it: the participant's 12-byte prefix, then the writer's
/// 4-byte entity id.
pub type Guid = [u8; 16];

/// One sample of one writer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SampleId {
    /// The writer that sent it.
    pub writer: Guid,
    /// Its RTPS sequence number within that writer (from 1).
    pub sn: i64,
}

/// The fragments one DATA_FRAG submessage carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fragments {
    /// First fragment number in the submessage (from 1).
    pub first: u32,
    /// Fragments in the submessage.
    pub count: u16,
    /// Bytes per fragment (the last may be shorter).
    pub fragment_size: u16,
    /// Bytes of the whole serialized sample.
    pub sample_size: u32,
}

impl Fragments {
    /// Fragments of the whole sample (at least 1).
    pub fn total(&self) -> u32 {
        let size = u32::from(self.fragment_size.max(1));
        self.sample_size.div_ceil(size).max(1)
    }
}

/// A DATA (whole sample) or DATA_FRAG (part of one) submessage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DataSubmessage {
    /// The sample it carries (or part of).
    pub id: SampleId,
    /// Which fragments, for DATA_FRAG; None for a whole-sample DATA.
    pub fragments: Option<Fragments>,
}

const RTPS_MAGIC: &[u8; 4] = b"RTPS";
const RTPS_HEADER: usize = 20;
const PAD: u8 = 0x01;
const INFO_TS: u8 = 0x09;
const INFO_SRC: u8 = 0x0c;
const DATA: u8 = 0x15;
const DATA_FRAG: u8 = 0x16;

/// The UDP payload of an IP packet that starts at its network header (IPv4 or IPv6 without
/// extension headers), as far as it was captured; `None` if it is not UDP or is a fragment
/// other than the first.
pub fn udp_payload(packet: &[u8]) -> Option<&[u8]> {
    let version = packet.first()? >> 4;
    let udp = match version {
        4 => {
            let ihl = usize::from(packet[0] & 0x0f) * 4;
            let frag_offset = u16::from_be_bytes([*packet.get(6)?, *packet.get(7)?]) & 0x1fff;
            if ihl < 20 || *packet.get(9)? != 17 || frag_offset != 0 {
                return None;
            }
            packet.get(ihl..)?
        }
        6 => {
            if *packet.get(6)? != 17 {
                return None;
            }
            packet.get(40..)?
        }
        _ => return None,
    };
    udp.get(8..)
}

fn u16_at(b: &[u8], at: usize, le: bool) -> Option<u16> {
    let v: [u8; 2] = b.get(at..at + 2)?.try_into().ok()?;
    Some(if le {
        u16::from_le_bytes(v)
    } else {
        u16::from_be_bytes(v)
    })
}

fn u32_at(b: &[u8], at: usize, le: bool) -> Option<u32> {
    let v: [u8; 4] = b.get(at..at + 4)?.try_into().ok()?;
    Some(if le {
        u32::from_le_bytes(v)
    } else {
        u32::from_be_bytes(v)
    })
}

/// Appends the DATA and DATA_FRAG submessages of one RTPS message to `out`, in order; false if
/// `msg` is not an RTPS message. A message cut short (a capture of the first IP fragment)
/// gives the submessages whose fixed part is there.
pub fn data_submessages(msg: &[u8], out: &mut Vec<DataSubmessage>) -> bool {
    if msg.len() < RTPS_HEADER || &msg[..4] != RTPS_MAGIC {
        return false;
    }
    let mut prefix = [0u8; 12];
    prefix.copy_from_slice(&msg[8..20]);
    let mut at = RTPS_HEADER;
    while at + 4 <= msg.len() {
        let id = msg[at];
        let flags = msg[at + 1];
        let le = flags & 0x01 != 0;
        let Some(len) = u16_at(msg, at + 2, le) else {
            break;
        };
        let body = at + 4;
        // A zero length means "up to the end of the message", except for PAD and INFO_TS
        // (RTPS 9.4.5.1.3).
        let end = if len == 0 && id != PAD && id != INFO_TS {
            msg.len()
        } else {
            body + usize::from(len)
        };
        let b = &msg[body..end.min(msg.len())];
        match id {
            INFO_SRC => {
                // unused (4), protocol version (2), vendor (2), GUID prefix (12)
                if let Some(p) = b.get(8..20) {
                    prefix.copy_from_slice(p);
                }
            }
            DATA | DATA_FRAG => {
                // extraFlags (2), octetsToInlineQos (2), readerId (4), writerId (4),
                // writerSN (high i32, low u32), then for DATA_FRAG: fragmentStartingNum (4),
                // fragmentsInSubmessage (2), fragmentSize (2), sampleSize (4).
                let (Some(entity), Some(high), Some(low)) =
                    (b.get(8..12), u32_at(b, 12, le), u32_at(b, 16, le))
                else {
                    break;
                };
                let mut writer = [0u8; 16];
                writer[..12].copy_from_slice(&prefix);
                writer[12..].copy_from_slice(entity);
                let sn = (i64::from(high as i32) << 32) | i64::from(low);
                let fragments = if id == DATA_FRAG {
                    let (Some(first), Some(count), Some(fragment_size), Some(sample_size)) = (
                        u32_at(b, 20, le),
                        u16_at(b, 24, le),
                        u16_at(b, 26, le),
                        u32_at(b, 28, le),
                    ) else {
                        break;
                    };
                    Some(Fragments {
                        first,
                        count,
                        fragment_size,
                        sample_size,
                    })
                } else {
                    None
                };
                out.push(DataSubmessage {
                    id: SampleId { writer, sn },
                    fragments,
                });
            }
            _ => {}
        }
        if end <= at {
            break;
        }
        at = end;
    }
    true
}

/// How long a sample seen leaving waits for its hand-off to be registered (and a handed-off
/// sample for its packet) before it is given up: far longer than RustDDS takes to send, short
/// enough to keep the tables small.
pub const MATCH_HORIZON_NS: i64 = 5_000_000_000;

/// Hand-off-to-wire delays taken together to decide whether the delay is steady (the first
/// block is the warm-up: nothing is scheduled early before it).
pub const EARLY_BLOCK: usize = 32;
/// A block is steady when its interquartile range is at most this.
pub const STEADY_IQR_NS: i64 = 100_000;
/// Never schedule earlier than this, whatever a block says: a delay this long is congestion,
/// not the DDS stack's steady cost.
pub const MAX_EARLY_NS: i64 = 2_000_000;

/// The steadiness rule: `Some(median)` when the block's delays are steady (interquartile range
/// at most [`STEADY_IQR_NS`], median between 0 and [`MAX_EARLY_NS`]), else `None`.
pub fn steady_shift(block: &[i64]) -> Option<i64> {
    if block.len() < EARLY_BLOCK {
        return None;
    }
    let mut v = block.to_vec();
    v.sort_unstable();
    let q = |p: f64| v[((v.len() - 1) as f64 * p).round() as usize];
    let (q1, median, q3) = (q(0.25), q(0.5), q(0.75));
    (q3 - q1 <= STEADY_IQR_NS && (0..=MAX_EARLY_NS).contains(&median)).then_some(median)
}

/// One topic's early-scheduling state: the current block of delays and the shift the last
/// complete block decided (0 when it was not steady).
#[derive(Debug, Clone, Default)]
pub struct EarlyRule {
    block: Vec<i64>,
    shift_ns: i64,
}

impl EarlyRule {
    /// Adds one message's hand-off-to-wire delay; each full block of them decides the shift
    /// anew.
    pub fn push(&mut self, delay_ns: i64) {
        self.block.push(delay_ns);
        if self.block.len() >= EARLY_BLOCK {
            self.shift_ns = steady_shift(&self.block).unwrap_or(0);
            self.block.clear();
        }
    }

    /// How much earlier than its target the next message should be handed off.
    pub fn shift_ns(&self) -> i64 {
        self.shift_ns
    }
}

/// A topic's wire measurements.
#[derive(Debug, Clone, Default)]
pub struct TopicWire {
    /// Per matched message: wire instant minus hand-off instant.
    pub handoff_to_wire: Vec<i64>,
    /// Per matched message: wire instant minus target (`timing_error` + the delay above).
    pub wire_error: Vec<i64>,
    /// The topic's early-scheduling state, fed by its hand-off-to-wire delays.
    pub early: EarlyRule,
    /// Handed off, never seen leaving within [`MATCH_HORIZON_NS`].
    pub not_seen: u64,
}

#[derive(Debug, Clone, Copy)]
struct HandOff {
    topic: usize,
    at_unix_ns: i64,
    error_ns: i64,
}

#[derive(Debug, Clone)]
struct Seen {
    first_unix_ns: i64,
    /// When the whole sample had left (its DATA, or its last fragment to leave).
    left_unix_ns: Option<i64>,
    /// For a fragmented sample: which fragments have left (bit per fragment) and how many.
    fragments: Vec<u64>,
    fragments_left: u32,
    fragments_total: u32,
}

/// Pairs handed-off samples with the packets that carried them.
#[derive(Debug)]
pub struct Matcher {
    /// Only samples of this participant's user-defined writers are taken.
    prefix: [u8; 12],
    handed_off: HashMap<SampleId, HandOff>,
    seen: HashMap<SampleId, Seen>,
    /// Per topic (the player's topic order): what was matched.
    pub topics: Vec<TopicWire>,
}

impl Matcher {
    /// A matcher for the samples of the participant with GUID prefix `prefix`, for `topics`
    /// topics.
    pub fn new(prefix: [u8; 12], topics: usize) -> Matcher {
        Matcher {
            prefix,
            handed_off: HashMap::new(),
            seen: HashMap::new(),
            topics: vec![TopicWire::default(); topics],
        }
    }

    fn record(&mut self, h: HandOff, left_unix_ns: i64) {
        let delay = left_unix_ns - h.at_unix_ns;
        if let Some(t) = self.topics.get_mut(h.topic) {
            t.handoff_to_wire.push(delay);
            t.wire_error.push(h.error_ns.saturating_add(delay));
            t.early.push(delay);
        }
    }

    /// The player handed sample `id` of `topic` to DDS at `at_unix_ns` (wall clock), with
    /// `error_ns` its timing error against the target.
    pub fn handed_off(&mut self, topic: usize, id: SampleId, at_unix_ns: i64, error_ns: i64) {
        let h = HandOff {
            topic,
            at_unix_ns,
            error_ns,
        };
        if let Some(left) = self.seen.get(&id).and_then(|s| s.left_unix_ns) {
            self.seen.remove(&id);
            self.record(h, left);
        } else {
            self.handed_off.insert(id, h);
        }
    }

    /// One outgoing packet, stamped `at_unix_ns` by the kernel, carried these submessages.
    pub fn on_packet(&mut self, at_unix_ns: i64, subs: &[DataSubmessage]) {
        for s in subs {
            // Ours, and a user-defined entity (kind's top bits 00; built-in ones are 11).
            if s.id.writer[..12] != self.prefix || s.id.writer[15] & 0xc0 != 0 {
                continue;
            }
            let e = self.seen.entry(s.id).or_insert_with(|| Seen {
                first_unix_ns: at_unix_ns,
                left_unix_ns: None,
                fragments: Vec::new(),
                fragments_left: 0,
                fragments_total: 0,
            });
            if e.left_unix_ns.is_some() {
                continue; // sent again (another reader, a repair): the first time counts
            }
            match s.fragments {
                None => e.left_unix_ns = Some(at_unix_ns),
                Some(f) => {
                    let total = f.total().min(1 << 20);
                    if e.fragments_total == 0 {
                        e.fragments_total = total;
                        e.fragments = vec![0; (total as usize).div_ceil(64)];
                    }
                    for n in f.first..f.first.saturating_add(u32::from(f.count)) {
                        let i = n.wrapping_sub(1);
                        if i >= e.fragments_total {
                            continue;
                        }
                        let (w, bit) = ((i / 64) as usize, 1u64 << (i % 64));
                        if e.fragments[w] & bit == 0 {
                            e.fragments[w] |= bit;
                            e.fragments_left += 1;
                        }
                    }
                    if e.fragments_left == e.fragments_total {
                        e.left_unix_ns = Some(at_unix_ns);
                        e.fragments = Vec::new();
                    }
                }
            }
            if let Some(left) = e.left_unix_ns {
                if let Some(h) = self.handed_off.remove(&s.id) {
                    self.seen.remove(&s.id);
                    self.record(h, left);
                }
            }
        }
    }

    /// Forgets what waited longer than [`MATCH_HORIZON_NS`] at `now_unix_ns`: packets no
    /// hand-off claimed (built-in traffic of user writers such as `/clock`, repairs), and
    /// hand-offs never seen leaving (no subscriber to send to, or the capture lost them).
    pub fn prune(&mut self, now_unix_ns: i64) {
        let old = now_unix_ns.saturating_sub(MATCH_HORIZON_NS);
        self.seen.retain(|_, s| s.first_unix_ns >= old);
        let topics = &mut self.topics;
        self.handed_off.retain(|_, h| {
            let keep = h.at_unix_ns >= old;
            if !keep {
                if let Some(t) = topics.get_mut(h.topic) {
                    t.not_seen += 1;
                }
            }
            keep
        });
    }

    /// Hand-offs still waiting for their packet.
    pub fn pending(&self) -> usize {
        self.handed_off.len()
    }

    /// Ends matching: what is still waiting was not seen leaving.
    pub fn finish(&mut self) {
        for h in std::mem::take(&mut self.handed_off).into_values() {
            if let Some(t) = self.topics.get_mut(h.topic) {
                t.not_seen += 1;
            }
        }
        self.seen.clear();
    }

    /// The current early shift for `topic`.
    pub fn shift_ns(&self, topic: usize) -> i64 {
        self.topics.get(topic).map_or(0, |t| t.early.shift_ns())
    }
}

#[cfg(target_os = "linux")]
pub use capture::Capture;

/// Why the wire is not measured where no capture can be opened.
#[cfg(not(target_os = "linux"))]
pub struct Capture;

#[cfg(not(target_os = "linux"))]
impl Capture {
    /// Always `Err`: no capture off Linux.
    pub fn start(_prefix: [u8; 12], _topics: usize) -> Result<Capture, String> {
        Err("not measured (packet capture is implemented for Linux only)".into())
    }
    /// No early shift: 0.
    pub fn shift_ns(&self, _topic: usize) -> i64 {
        0
    }
    /// Does nothing.
    pub fn handed_off(&self, _topic: usize, _id: SampleId, _at: i64, _err: i64) {}
    /// An empty matcher and no dropped packets.
    pub fn finish(self, _drain: std::time::Duration) -> (Matcher, u64) {
        (Matcher::new([0; 12], 0), 0)
    }
}

#[cfg(target_os = "linux")]
mod capture {
    use std::io;
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, Mutex, MutexGuard};
    use std::thread::JoinHandle;
    use std::time::{Duration, Instant};

    use super::{data_submessages, udp_payload, DataSubmessage, Matcher, SampleId};

    // From <linux/if_packet.h>; not all are in the libc crate.
    const PACKET_OUTGOING: u8 = 4;
    const SOL_PACKET: libc::c_int = 263;
    const PACKET_STATISTICS: libc::c_int = 6;
    #[repr(C)]
    #[derive(Default)]
    struct TpacketStats {
        tp_packets: u32,
        tp_drops: u32,
    }

    /// Largest packet kept (a whole UDP datagram on loopback).
    const SNAP_BYTES: u32 = 1 << 18;

    /// Keeps outgoing UDP datagrams whose payload starts with `RTPS`, over IPv4 or IPv6 (no
    /// extension headers); the packet starts at its network header (`SOCK_DGRAM`).
    fn filter() -> Vec<libc::sock_filter> {
        let op = |code: u32, jt: u8, jf: u8, k: u32| libc::sock_filter {
            code: code as u16,
            jt,
            jf,
            k,
        };
        let ld_w_abs = libc::BPF_LD | libc::BPF_W | libc::BPF_ABS;
        let ld_b_abs = libc::BPF_LD | libc::BPF_B | libc::BPF_ABS;
        let jeq = libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K;
        let ad = |off: libc::c_int| (libc::SKF_AD_OFF + off) as u32;
        let magic = u32::from_be_bytes(*b"RTPS");
        vec![
            /* 0 */ op(ld_w_abs, 0, 0, ad(libc::SKF_AD_PKTTYPE)),
            /* 1 */ op(jeq, 0, 12, u32::from(PACKET_OUTGOING)),
            /* 2 */ op(ld_w_abs, 0, 0, ad(libc::SKF_AD_PROTOCOL)),
            /* 3 */ op(jeq, 0, 5, 0x0800),
            // IPv4: UDP, then the magic after the variable-length header and 8 bytes of UDP.
            /* 4 */
            op(ld_b_abs, 0, 0, 9),
            /* 5 */ op(jeq, 0, 8, 17),
            /* 6 */ op(libc::BPF_LDX | libc::BPF_B | libc::BPF_MSH, 0, 0, 0),
            /* 7 */ op(libc::BPF_LD | libc::BPF_W | libc::BPF_IND, 0, 0, 8),
            /* 8 */ op(jeq, 4, 5, magic),
            // IPv6: UDP as the next header, the magic at 40 + 8.
            /* 9 */
            op(jeq, 0, 4, 0x86dd),
            /* 10 */ op(ld_b_abs, 0, 0, 6),
            /* 11 */ op(jeq, 0, 2, 17),
            /* 12 */ op(ld_w_abs, 0, 0, 48),
            /* 13 */ op(jeq, 0, 1, magic),
            /* 14 */ op(libc::BPF_RET | libc::BPF_K, 0, 0, SNAP_BYTES),
            /* 15 */ op(libc::BPF_RET | libc::BPF_K, 0, 0, 0),
        ]
    }

    fn setsockopt<T>(fd: &OwnedFd, level: libc::c_int, name: libc::c_int, v: &T) -> io::Result<()> {
        // SAFETY: `v` points to a live value of the size passed.
        let r = unsafe {
            libc::setsockopt(
                fd.as_raw_fd(),
                level,
                name,
                v as *const T as *const libc::c_void,
                std::mem::size_of::<T>() as libc::socklen_t,
            )
        };
        if r == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }

    /// A packet socket on every interface that sees this host's outgoing RTPS datagrams with
    /// their kernel timestamps.
    fn open() -> Result<OwnedFd, String> {
        // SAFETY: plain socket(2); the descriptor is owned at once.
        let raw = unsafe {
            libc::socket(
                libc::AF_PACKET,
                libc::SOCK_DGRAM | libc::SOCK_CLOEXEC,
                (libc::ETH_P_ALL as u16).to_be() as libc::c_int,
            )
        };
        if raw < 0 {
            let e = io::Error::last_os_error();
            return Err(match e.raw_os_error() {
                Some(libc::EPERM) | Some(libc::EACCES) => {
                    "not measured (needs CAP_NET_RAW: run as root or grant the capability)".into()
                }
                _ => format!("not measured (no packet socket: {e})"),
            });
        }
        // SAFETY: `raw` is a new descriptor that nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let prog = filter();
        let fprog = libc::sock_fprog {
            len: prog.len() as u16,
            filter: prog.as_ptr() as *mut libc::sock_filter,
        };
        let e = |what: &str, err: io::Error| format!("not measured ({what}: {err})");
        setsockopt(&fd, libc::SOL_SOCKET, libc::SO_ATTACH_FILTER, &fprog)
            .map_err(|x| e("packet filter", x))?;
        setsockopt(
            &fd,
            libc::SOL_SOCKET,
            libc::SO_TIMESTAMPNS,
            &1 as &libc::c_int,
        )
        .map_err(|x| e("kernel timestamps", x))?;
        let timeout = libc::timeval {
            tv_sec: 0,
            tv_usec: 20_000,
        };
        setsockopt(&fd, libc::SOL_SOCKET, libc::SO_RCVTIMEO, &timeout)
            .map_err(|x| e("receive timeout", x))?;
        // A deep queue, so that a burst is not lost while this thread waits for a CPU.
        let bytes: libc::c_int = 16 << 20;
        if setsockopt(&fd, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, &bytes).is_err() {
            let _ = setsockopt(&fd, libc::SOL_SOCKET, libc::SO_RCVBUF, &bytes);
        }
        // Packets queued before the filter was attached are dropped by the matcher (they are
        // not the player's samples): nothing was handed off yet.
        Ok(fd)
    }

    /// Packets the kernel had to drop for want of room in the socket's queue (counter reset by
    /// the read).
    fn drops(fd: &OwnedFd) -> u64 {
        let mut st = TpacketStats::default();
        let mut len = std::mem::size_of::<TpacketStats>() as libc::socklen_t;
        // SAFETY: `st` has the size passed in `len`.
        let r = unsafe {
            libc::getsockopt(
                fd.as_raw_fd(),
                SOL_PACKET,
                PACKET_STATISTICS,
                &mut st as *mut TpacketStats as *mut libc::c_void,
                &mut len,
            )
        };
        if r == 0 {
            u64::from(st.tp_drops)
        } else {
            0
        }
    }

    /// One received packet: its length and kernel timestamp (ns since the epoch), if it was an
    /// outgoing one with a timestamp. `Err` on a timeout (`WouldBlock`) or error.
    fn receive(fd: &OwnedFd, buf: &mut [u8]) -> io::Result<Option<(usize, i64)>> {
        let mut control = [0u64; 16];
        // SAFETY: all-zero is a valid sockaddr_ll / msghdr.
        let mut addr: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        let mut iov = libc::iovec {
            iov_base: buf.as_mut_ptr() as *mut libc::c_void,
            iov_len: buf.len(),
        };
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_name = &mut addr as *mut libc::sockaddr_ll as *mut libc::c_void;
        msg.msg_namelen = std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t;
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr() as *mut libc::c_void;
        msg.msg_controllen = std::mem::size_of_val(&control) as _;
        // SAFETY: every pointer in `msg` refers to a live buffer of the length given.
        let n = unsafe { libc::recvmsg(fd.as_raw_fd(), &mut msg, 0) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        if addr.sll_pkttype != PACKET_OUTGOING {
            return Ok(None);
        }
        let mut stamp = None;
        // SAFETY: the control buffer was filled by recvmsg; the CMSG_* helpers walk it within
        // `msg_controllen`, and the timestamp is read unaligned from inside it.
        unsafe {
            let mut c = libc::CMSG_FIRSTHDR(&msg);
            while !c.is_null() {
                if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_TIMESTAMPNS {
                    let ts: libc::timespec =
                        std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const libc::timespec);
                    stamp = Some(ts.tv_sec as i64 * 1_000_000_000 + ts.tv_nsec as i64);
                }
                c = libc::CMSG_NXTHDR(&msg, c);
            }
        }
        Ok(stamp.map(|t| (n as usize, t)))
    }

    /// Whether sent packets are stamped when they leave. Turning kernel timestamps on is
    /// deferred to a work queue when no other socket has them on yet, and a packet that passes
    /// before then is stamped only when it is read, later than it left. So a datagram with the
    /// RTPS magic (and no submessage) is sent over loopback until its stamp falls between the
    /// clock readings around its send, while the read waits a millisecond to tell the two
    /// apart. Without a usable loopback this cannot be checked, and is taken as on.
    fn send_stamps_on(fd: &OwnedFd) -> bool {
        let sockets = std::net::UdpSocket::bind("127.0.0.1:0").and_then(|tx| {
            let rx = std::net::UdpSocket::bind("127.0.0.1:0")?;
            let to = rx.local_addr()?;
            Ok((tx, rx, to))
        });
        let Ok((tx, _rx, to)) = sockets else {
            return true;
        };
        let mut buf = vec![0u8; 2048];
        for attempt in 0u32..200 {
            let mut probe = b"RTPS".to_vec();
            probe.extend_from_slice(&[0; 16]);
            probe.extend_from_slice(b"bagscope-probe");
            probe.extend_from_slice(&std::process::id().to_be_bytes());
            probe.extend_from_slice(&attempt.to_be_bytes());
            let before = crate::pace::unix_now_ns();
            if tx.send_to(&probe, to).is_err() {
                return true;
            }
            let after = crate::pace::unix_now_ns();
            std::thread::sleep(Duration::from_millis(1));
            let until = Instant::now() + Duration::from_millis(50);
            while Instant::now() < until {
                match receive(fd, &mut buf) {
                    Ok(Some((n, at))) => {
                        if udp_payload(&buf[..n.min(buf.len())]) == Some(&probe[..]) {
                            if (before..=after).contains(&at) {
                                return true;
                            }
                            break;
                        }
                    }
                    Ok(None) => {}
                    Err(_) => break,
                }
            }
        }
        false
    }

    /// The capture thread and what it matched.
    pub struct Capture {
        matcher: Arc<Mutex<Matcher>>,
        stop: Arc<AtomicBool>,
        thread: Option<JoinHandle<u64>>,
    }

    fn lock(m: &Mutex<Matcher>) -> MutexGuard<'_, Matcher> {
        match m.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        }
    }

    impl Capture {
        /// Starts capturing the outgoing samples of the participant with GUID prefix
        /// `prefix`, for `topics` topics; `Err` says why the wire cannot be measured.
        pub fn start(prefix: [u8; 12], topics: usize) -> Result<Capture, String> {
            let fd = open()?;
            if !send_stamps_on(&fd) {
                return Err(
                    "not measured (the kernel did not timestamp sent packets when they left)"
                        .into(),
                );
            }
            let matcher = Arc::new(Mutex::new(Matcher::new(prefix, topics)));
            let stop = Arc::new(AtomicBool::new(false));
            let (m, s) = (matcher.clone(), stop.clone());
            let thread = std::thread::Builder::new()
                .name("wire-capture".into())
                .spawn(move || run(fd, &m, &s))
                .map_err(|e| format!("not measured (capture thread: {e})"))?;
            Ok(Capture {
                matcher,
                stop,
                thread: Some(thread),
            })
        }

        /// How much earlier than its target `topic`'s next message should be handed off
        /// (0 until its hand-off-to-wire delay has been steady for a block).
        pub fn shift_ns(&self, topic: usize) -> i64 {
            lock(&self.matcher).shift_ns(topic)
        }

        /// The player handed sample `id` of `topic` to DDS at `at_unix_ns` (wall clock), with
        /// `error_ns` its timing error against the target.
        pub fn handed_off(&self, topic: usize, id: SampleId, at_unix_ns: i64, error_ns: i64) {
            lock(&self.matcher).handed_off(topic, id, at_unix_ns, error_ns);
        }

        /// Waits up to `drain` for the samples still on their way out, stops the capture, and
        /// returns the matches and the packets the kernel dropped from the capture.
        pub fn finish(mut self, drain: Duration) -> (Matcher, u64) {
            let until = Instant::now() + drain;
            while lock(&self.matcher).pending() > 0 && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(5));
            }
            self.stop.store(true, Ordering::SeqCst);
            let dropped = self.thread.take().and_then(|t| t.join().ok()).unwrap_or(0);
            let mut m = lock(&self.matcher);
            m.finish();
            let topics = std::mem::take(&mut m.topics);
            let mut out = Matcher::new([0; 12], 0);
            out.topics = topics;
            (out, dropped)
        }
    }

    impl Drop for Capture {
        fn drop(&mut self) {
            self.stop.store(true, Ordering::SeqCst);
            if let Some(t) = self.thread.take() {
                let _ = t.join();
            }
        }
    }

    /// Below the player in the scheduler's eyes: the kernel stamps each packet when it is
    /// sent, so reading it later costs no accuracy, while a capture thread competing for a
    /// busy core could delay the player's next hand-off.
    const CAPTURE_NICE: libc::c_int = 10;

    fn run(fd: OwnedFd, m: &Mutex<Matcher>, stop: &AtomicBool) -> u64 {
        // SAFETY: gettid has no preconditions; setpriority on this thread's id changes only
        // this thread's nice value (Linux keeps it per thread). Failure leaves it as it was.
        unsafe {
            let tid = libc::gettid();
            libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, CAPTURE_NICE);
        }
        let mut buf = vec![0u8; SNAP_BYTES as usize];
        let mut subs: Vec<DataSubmessage> = Vec::new();
        // Reading the counter resets it: drops before this point were not the player's.
        drops(&fd);
        let mut last_prune = Instant::now();
        while !stop.load(Ordering::Relaxed) {
            match receive(&fd, &mut buf) {
                Ok(Some((n, at))) => {
                    subs.clear();
                    let n = n.min(buf.len());
                    if let Some(udp) = udp_payload(&buf[..n]) {
                        if data_submessages(udp, &mut subs) && !subs.is_empty() {
                            lock(m).on_packet(at, &subs);
                        }
                    }
                }
                Ok(None) => {}
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock
                            | std::io::ErrorKind::TimedOut
                            | std::io::ErrorKind::Interrupted
                    ) => {}
                Err(_) => break,
            }
            if last_prune.elapsed() > Duration::from_millis(500) {
                last_prune = Instant::now();
                lock(m).prune(crate::pace::unix_now_ns());
            }
        }
        drops(&fd)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PREFIX: [u8; 12] = [1, 15, 0xaa, 0xbb, 1, 2, 3, 4, 5, 6, 7, 8];
    const WRITER: [u8; 4] = [0, 0, 0x12, 0x03]; // user-defined writer, no key

    fn guid(prefix: [u8; 12], entity: [u8; 4]) -> Guid {
        let mut g = [0u8; 16];
        g[..12].copy_from_slice(&prefix);
        g[12..].copy_from_slice(&entity);
        g
    }

    /// An RTPS message: header with `prefix`, then the given submessages.
    fn rtps(prefix: [u8; 12], subs: &[Vec<u8>]) -> Vec<u8> {
        let mut m = b"RTPS".to_vec();
        m.extend_from_slice(&[2, 4, 0x01, 0x12]); // version 2.4, vendor
        m.extend_from_slice(&prefix);
        for s in subs {
            m.extend_from_slice(s);
        }
        m
    }

    fn sub(id: u8, le: bool, extra_flags: u8, body: &[u8], length: Option<u16>) -> Vec<u8> {
        let len = length.unwrap_or(body.len() as u16);
        let mut s = vec![id, u8::from(le) | extra_flags];
        s.extend_from_slice(&if le {
            len.to_le_bytes()
        } else {
            len.to_be_bytes()
        });
        s.extend_from_slice(body);
        s
    }

    fn info_ts(le: bool) -> Vec<u8> {
        let e = |v: u32| if le { v.to_le_bytes() } else { v.to_be_bytes() };
        let mut b = e(1_764_000_000).to_vec();
        b.extend_from_slice(&e(0x8000_0000));
        sub(INFO_TS, le, 0, &b, None)
    }

    /// A DATA (or, with `frag`, DATA_FRAG) submessage body, then `payload`.
    fn data(
        le: bool,
        writer: [u8; 4],
        sn: i64,
        frag: Option<(u32, u16, u16, u32)>,
        payload: &[u8],
    ) -> Vec<u8> {
        let e32 = |v: u32| if le { v.to_le_bytes() } else { v.to_be_bytes() };
        let e16 = |v: u16| if le { v.to_le_bytes() } else { v.to_be_bytes() };
        let mut b = Vec::new();
        b.extend_from_slice(&e16(0)); // extraFlags
        b.extend_from_slice(&e16(if frag.is_some() { 28 } else { 16 }));
        b.extend_from_slice(&[0, 0, 0, 0]); // readerId: unknown
        b.extend_from_slice(&writer);
        b.extend_from_slice(&e32((sn >> 32) as u32));
        b.extend_from_slice(&e32(sn as u32));
        if let Some((first, count, size, total)) = frag {
            b.extend_from_slice(&e32(first));
            b.extend_from_slice(&e16(count));
            b.extend_from_slice(&e16(size));
            b.extend_from_slice(&e32(total));
        }
        b.extend_from_slice(&[0x00, 0x01, 0, 0]); // CDR_LE encapsulation
        b.extend_from_slice(payload);
        let id = if frag.is_some() { DATA_FRAG } else { DATA };
        sub(id, le, 0x04, &b, None)
    }

    /// IPv4 + UDP around `payload`, as a packet socket of type SOCK_DGRAM gives it.
    fn ipv4_udp(payload: &[u8], options: usize) -> Vec<u8> {
        let ihl = 20 + options;
        let mut p = vec![0u8; ihl];
        p[0] = 0x40 | (ihl / 4) as u8;
        let total = (ihl + 8 + payload.len()) as u16;
        p[2..4].copy_from_slice(&total.to_be_bytes());
        p[6] = 0x40; // don't fragment
        p[8] = 64;
        p[9] = 17;
        p[12..16].copy_from_slice(&[10, 231, 0, 1]);
        p[16..20].copy_from_slice(&[239, 255, 0, 1]);
        p.extend_from_slice(&40000u16.to_be_bytes());
        p.extend_from_slice(&7401u16.to_be_bytes());
        p.extend_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
        p.extend_from_slice(&[0, 0]);
        p.extend_from_slice(payload);
        p
    }

    #[test]
    fn parses_the_data_submessages_of_a_captured_packet() {
        let other_prefix = [9u8; 12];
        let msg = rtps(
            PREFIX,
            &[
                info_ts(true),
                data(true, WRITER, 7, None, b"hello"),
                // Big-endian sample with a sequence number above 2^32.
                info_ts(false),
                data(false, WRITER, (3 << 32) | 5, None, b"abc"),
                // A HEARTBEAT (ignored).
                sub(0x07, true, 0, &[0u8; 28], None),
                // INFO_SRC: what follows comes from another participant.
                sub(
                    INFO_SRC,
                    true,
                    0,
                    &[&[0u8; 8][..], &other_prefix[..]].concat(),
                    None,
                ),
                // The last submessage with length 0: it runs to the end of the message.
                {
                    let mut d = data(true, WRITER, 2, Some((3, 2, 1024, 5000)), &[0u8; 40]);
                    d[2] = 0;
                    d[3] = 0;
                    d
                },
            ],
        );
        let packet = ipv4_udp(&msg, 4);
        let udp = udp_payload(&packet).expect("UDP payload");
        assert_eq!(udp, &msg[..]);
        let mut got = Vec::new();
        assert!(data_submessages(udp, &mut got));
        assert_eq!(
            got,
            vec![
                DataSubmessage {
                    id: SampleId {
                        writer: guid(PREFIX, WRITER),
                        sn: 7
                    },
                    fragments: None
                },
                DataSubmessage {
                    id: SampleId {
                        writer: guid(PREFIX, WRITER),
                        sn: (3 << 32) | 5
                    },
                    fragments: None
                },
                DataSubmessage {
                    id: SampleId {
                        writer: guid(other_prefix, WRITER),
                        sn: 2
                    },
                    fragments: Some(Fragments {
                        first: 3,
                        count: 2,
                        fragment_size: 1024,
                        sample_size: 5000
                    })
                },
            ]
        );
        assert_eq!(got[2].fragments.unwrap().total(), 5);

        // Not RTPS, not UDP, a later IP fragment, a message cut inside its first DATA.
        let mut none = Vec::new();
        assert!(!data_submessages(b"RTPX0000000000000000", &mut none));
        let mut tcp = ipv4_udp(&msg, 0);
        tcp[9] = 6;
        assert!(udp_payload(&tcp).is_none());
        let mut later_fragment = ipv4_udp(&msg, 0);
        later_fragment[6..8].copy_from_slice(&0x0010u16.to_be_bytes());
        assert!(udp_payload(&later_fragment).is_none());
        let cut = &msg[..20 + 12 + 4 + 10];
        assert!(data_submessages(cut, &mut none));
        assert!(none.is_empty());
    }

    fn id(sn: i64) -> SampleId {
        SampleId {
            writer: guid(PREFIX, WRITER),
            sn,
        }
    }

    fn whole(sn: i64) -> DataSubmessage {
        DataSubmessage {
            id: id(sn),
            fragments: None,
        }
    }

    #[test]
    fn matches_packets_to_hand_offs_in_either_order() {
        let mut m = Matcher::new(PREFIX, 2);
        // Handed off first, seen later; sent again to a second reader (ignored).
        m.handed_off(0, id(1), 1_000_000, 50_000);
        m.on_packet(1_250_000, &[whole(1)]);
        m.on_packet(1_400_000, &[whole(1)]);
        // Seen before its hand-off was registered (the DDS thread was quicker).
        m.on_packet(2_300_000, &[whole(2)]);
        m.handed_off(1, id(2), 2_000_000, -10_000);
        // Another participant's sample and a built-in writer's: not ours.
        let mut foreign = whole(3);
        foreign.id.writer[0] = 99;
        let mut builtin = whole(3);
        builtin.id.writer[15] = 0xc2;
        m.on_packet(3_000_000, &[foreign, builtin]);
        m.handed_off(0, id(3), 2_900_000, 0);
        assert_eq!(m.topics[0].handoff_to_wire, vec![250_000]);
        assert_eq!(m.topics[0].wire_error, vec![300_000]);
        assert_eq!(m.topics[1].handoff_to_wire, vec![300_000]);
        assert_eq!(m.topics[1].wire_error, vec![290_000]);
        assert_eq!(m.pending(), 1);
        // Never seen leaving: counted once it is older than the horizon.
        m.prune(2_900_000 + MATCH_HORIZON_NS - 1);
        assert_eq!(m.topics[0].not_seen, 0);
        m.prune(2_900_001 + MATCH_HORIZON_NS);
        assert_eq!((m.topics[0].not_seen, m.pending()), (1, 0));
    }

    #[test]
    fn a_fragmented_sample_has_left_when_its_last_fragment_has() {
        let mut m = Matcher::new(PREFIX, 1);
        m.handed_off(0, id(4), 0, 0);
        let frag = |first, count| DataSubmessage {
            id: id(4),
            fragments: Some(Fragments {
                first,
                count,
                fragment_size: 1000,
                sample_size: 2500,
            }),
        };
        m.on_packet(100, &[frag(1, 1)]);
        m.on_packet(150, &[frag(1, 1)]); // repeated: no progress
        assert!(m.topics[0].handoff_to_wire.is_empty());
        m.on_packet(200, &[frag(2, 2)]);
        assert_eq!(m.topics[0].handoff_to_wire, vec![200]);
        // Out-of-range fragment numbers are ignored, not a panic.
        m.handed_off(0, id(5), 0, 0);
        let mut bad = frag(0, 9);
        bad.id = id(5);
        m.on_packet(300, &[bad]);
        assert_eq!(m.topics[0].handoff_to_wire, vec![200, 300]);
    }

    /// The capture on a real socket: a DATA sent over loopback is seen leaving, with a kernel
    /// timestamp between the hand-off and the return of the send. Needs CAP_NET_RAW: skipped
    /// with a note without it.
    #[cfg(target_os = "linux")]
    #[test]
    fn captures_an_outgoing_rtps_datagram_with_its_kernel_timestamp() {
        let prefix = [0x42, 0x53, 0x43, 0x50, 0x7e, 1, 2, 3, 4, 5, 6, 7];
        let c = match Capture::start(prefix, 1) {
            Ok(c) => c,
            Err(why) => {
                eprintln!("note: packet capture not possible here ({why}): not checked");
                return;
            }
        };
        let rx = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let tx = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let now = || crate::pace::unix_now_ns();
        let mut bounds = Vec::new();
        for sn in 1..=20 {
            let handoff = now();
            c.handed_off(
                0,
                SampleId {
                    writer: guid(prefix, WRITER),
                    sn,
                },
                handoff,
                1_000,
            );
            // Another participant's sample with the same writer id and number: not matched.
            tx.send_to(
                &rtps([7; 12], &[data(true, WRITER, sn, None, b"x")]),
                rx.local_addr().unwrap(),
            )
            .unwrap();
            tx.send_to(
                &rtps(
                    prefix,
                    &[info_ts(true), data(true, WRITER, sn, None, b"hello")],
                ),
                rx.local_addr().unwrap(),
            )
            .unwrap();
            bounds.push(now() - handoff);
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        let (m, dropped) = c.finish(std::time::Duration::from_secs(2));
        let t = &m.topics[0];
        assert_eq!((t.handoff_to_wire.len(), t.not_seen, dropped), (20, 0, 0));
        for (i, (d, bound)) in t.handoff_to_wire.iter().zip(&bounds).enumerate() {
            assert!(
                (0..=*bound).contains(d),
                "packet {i}: stamped {d} ns after its hand-off, the send returned after {bound}"
            );
        }
        assert!(t
            .wire_error
            .iter()
            .zip(&t.handoff_to_wire)
            .all(|(w, d)| *w == d + 1_000));
    }

    #[test]
    fn schedules_early_only_by_a_steady_delay() {
        // Steady: the warm-up block gives its median, nothing before it is complete.
        let mut r = EarlyRule::default();
        for i in 0..EARLY_BLOCK as i64 - 1 {
            r.push(240_000 + (i % 5) * 10_000);
            assert_eq!(r.shift_ns(), 0);
        }
        r.push(250_000);
        assert_eq!(r.shift_ns(), 260_000);
        // A block with a wide spread (IQR 0.5 ms) stops the shift.
        for i in 0..EARLY_BLOCK as i64 {
            r.push(if i % 2 == 0 { 100_000 } else { 600_000 });
        }
        assert_eq!(r.shift_ns(), 0);
        // A few outliers (1 ms, under a quarter of the block) do not.
        for i in 0..EARLY_BLOCK as i64 {
            r.push(if i % 8 == 0 {
                1_000_000
            } else {
                200_000 + i * 1_000
            });
        }
        assert!(
            (200_000..232_000).contains(&r.shift_ns()),
            "{}",
            r.shift_ns()
        );
        // Steady but over the cap: congestion, never scheduled early.
        assert_eq!(steady_shift(&[MAX_EARLY_NS + 1; EARLY_BLOCK]), None);
        assert_eq!(steady_shift(&[-5; EARLY_BLOCK]), None);
        assert_eq!(steady_shift(&[100; EARLY_BLOCK - 1]), None);
        // IQR exactly at the threshold is steady, just over it is not.
        let mut v: Vec<i64> = (0..EARLY_BLOCK as i64).map(|i| i * 10).collect();
        let (q1, q3) = (8usize, 23usize); // the quartiles' positions in 32 sorted values
        v[..q1 + 1].iter_mut().for_each(|x| *x = 0);
        v[q3..].iter_mut().for_each(|x| *x = STEADY_IQR_NS);
        assert_eq!(steady_shift(&v), Some(v[16]));
        v[q3..].iter_mut().for_each(|x| *x = STEADY_IQR_NS + 1);
        assert_eq!(steady_shift(&v), None);
    }
}
