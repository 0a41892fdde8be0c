//! The ring reservation's claim step (runtime-ptx/src/ringbuf.rs, module doc, "Reserving
//! never blocks"), checked over every interleaving of a few group leaders and a host that
//! frees the ring, on a sequentially consistent model.
//!
//! What ships, [`Protocol::Bound`]: descriptor word 7 is the **bound**, the producer plus
//! every byte claimed and neither added to the producer nor given back. Each leader stands
//! for a group of lanes, each lane one record of some bytes; in the order the PTX does it
//! (the runtime's `bpf2ptx_ringbuf_reserve` and the inlined output alike) it reads the
//! consumer, reads the bound, and takes the longest prefix of its lanes that ends within
//! `consumer + aux - bound` (`G0` bytes); with none, it drops without an atomic. Else it
//! claims `G0` on the bound (`atom.add`, returning `old`), keeps the longest prefix that
//! also ends within `consumer + aux - old` (`G` bytes), gives back `G0 - G`, and adds `G`
//! to the producer.
//!
//! What it replaced (issue 12), [`Protocol::InFlight`]: word 7 counted the bytes claimed
//! in flight; a leader claimed its whole group first (the inlined output did not look at
//! the room before), read the consumer and the producer, checked `producer + in_flight +
//! G - consumer <= aux`, and when that failed while other claims were in flight gave the
//! claim back and claimed again, `tries` times in all.
//!
//! The model checks what both promise (the producer never passes `consumer + aux`, every
//! claim is given back, the producer ends at the start plus what was taken) and shows the
//! difference that made a ring drained live keep no more records than an undrained one:
//! with the in-flight word a check counts a leader's bytes twice, and the claims of leaders
//! that cannot succeed make the leaders that saw the host free the ring fail; with the
//! bound neither happens.

use std::collections::HashSet;
use std::hash::{BuildHasherDefault, Hasher};

/// A fast hash for the memo of states (FxHash's mixing step): the exploration hashes
/// millions of small states, and SipHash made the in-flight protocol's 8 tries slow.
#[derive(Default)]
struct Fx(u64);

impl Hasher for Fx {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    fn write_u32(&mut self, n: u32) {
        self.write_u64(u64::from(n));
    }
    fn write_u8(&mut self, n: u8) {
        self.write_u64(u64::from(n));
    }
    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }
}

/// Claims in all of the in-flight protocol as it last shipped (`CLAIM_TRIES`).
const OLD_TRIES: u32 = 8;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Pc {
    /// Bound: read the consumer, then the bound. In flight: read the consumer.
    ReadConsumer,
    /// Bound only: the bound; the prefix that fits, `G0`.
    ReadBound,
    /// Bound: `atom.add(bound, G0)`. In flight: `atom.add(in_flight, G)`.
    Claim,
    /// In flight only: the producer.
    ReadProducer,
    /// In flight only: the check, and the producer add when it holds.
    Check,
    /// Give back: the bound's `G0 - G`, or the whole in-flight claim.
    GiveBack,
    /// Bound only: `atom.add(producer, G)`.
    Take,
    Done,
}

/// Which claim protocol the leaders follow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Protocol {
    /// What ships: word 7 is the producer plus the claims in flight.
    Bound,
    /// Before issue 12: word 7 counts claims in flight; claim first; `tries` claims at most.
    InFlight { tries: u32 },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Leader {
    pc: Pc,
    /// The consumer as it last read it.
    consumer: u64,
    /// Whether that read came after the host freed the ring.
    late: bool,
    /// Bound: the bytes of the lanes that fit the bound it read (`G0`). In flight: what
    /// the claim's `atom.add` returned (other leaders' claims).
    claimed: u64,
    /// Bound: the bytes it keeps (`G`). In flight: the producer it read.
    keep: u64,
    /// In flight: claims left, counting the current one.
    tries: u32,
    /// Whether a claim of it was ever given back in part (bound) — a claim too large.
    overshot: bool,
    /// The bytes it took, once it has decided.
    took: Option<u64>,
}

/// Leaders a setting may have (a fixed array keeps states free of allocations).
const MAX_LEADERS: usize = 3;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct State {
    producer: u64,
    consumer: u64,
    /// Word 7: the bound, or (in flight) the claims in flight.
    word7: u64,
    /// Whether the host has freed the ring yet (its one step).
    freed: bool,
    /// The setting's leaders first; the rest are done and took nothing.
    leaders: [Leader; MAX_LEADERS],
}

/// A run's setting: ring bytes, each leader's lanes (record bytes), the protocol, and how
/// many bytes the host consumes in its one step (0: no host step).
struct Setting<'a> {
    aux: u64,
    lanes: &'a [&'a [u64]],
    protocol: Protocol,
    host_frees: u64,
}

/// What every complete interleaving showed.
#[derive(Default, Debug)]
struct Outcome {
    /// Terminal states reached (distinct).
    ends: usize,
    /// Some leader took less than all its lanes although every leader's lanes fit the ring.
    needless_drop: bool,
    /// Some leader that read the consumer after the host freed the ring took less than all
    /// its lanes although the lanes of every such leader fit in what the host freed.
    late_leader_dropped: bool,
    /// Some leader dropped a lane that fits the room left at the end although no claim
    /// was ever too large (bound) — a drop with room to spare that no overshoot explains.
    unexplained_drop: bool,
}

/// The bytes of the longest prefix of `lanes` that ends within `room`.
fn prefix(lanes: &[u64], room: u64) -> u64 {
    let mut end = 0;
    for &t in lanes {
        if end + t > room {
            break;
        }
        end += t;
    }
    end
}

/// `consumer + aux - word`, or 0 when the words are inconsistent (word below the consumer
/// or past `consumer + aux`), as the PTX computes it.
fn room(consumer: u64, aux: u64, word: u64) -> u64 {
    if consumer <= word && word <= consumer + aux {
        consumer + aux - word
    } else {
        0
    }
}

impl Setting<'_> {
    fn start(&self, producer: u64, consumer: u64) -> State {
        State {
            producer,
            consumer,
            word7: match self.protocol {
                Protocol::Bound => producer,
                Protocol::InFlight { .. } => 0,
            },
            freed: self.host_frees == 0,
            leaders: std::array::from_fn(|k| Leader {
                pc: match self.protocol {
                    _ if k >= self.lanes.len() => Pc::Done,
                    Protocol::Bound => Pc::ReadConsumer,
                    Protocol::InFlight { .. } => Pc::Claim,
                },
                consumer: 0,
                late: false,
                claimed: 0,
                keep: 0,
                tries: match self.protocol {
                    Protocol::Bound => 1,
                    Protocol::InFlight { tries } => tries,
                },
                overshot: false,
                took: (k >= self.lanes.len()).then_some(0),
            }),
        }
    }

    /// The host's step: it consumes (and zeroes) up to `host_frees` committed bytes.
    fn free(&self, s: &State) -> State {
        let mut s = *s;
        s.consumer = (s.consumer + self.host_frees).min(s.producer);
        s.freed = true;
        s
    }

    /// Leader `k`'s next step (each one atomic on the shared words).
    fn step(&self, s: &State, k: usize) -> State {
        let mut s = *s;
        let lanes = self.lanes[k];
        let total: u64 = lanes.iter().sum();
        let aux = self.aux;
        let me = &mut s.leaders[k];
        match (self.protocol, me.pc) {
            (_, Pc::ReadConsumer) => {
                me.consumer = s.consumer;
                me.late = s.freed && self.host_frees > 0;
                me.pc = match self.protocol {
                    Protocol::Bound => Pc::ReadBound,
                    Protocol::InFlight { .. } => Pc::ReadProducer,
                };
            }
            (Protocol::Bound, Pc::ReadBound) => {
                me.claimed = prefix(lanes, room(me.consumer, aux, s.word7));
                if me.claimed == 0 {
                    me.took = Some(0);
                    me.pc = Pc::Done;
                } else {
                    me.pc = Pc::Claim;
                }
            }
            (Protocol::Bound, Pc::Claim) => {
                let old = s.word7;
                s.word7 += me.claimed;
                me.keep = prefix(lanes, room(me.consumer, aux, old).min(me.claimed));
                me.took = Some(me.keep);
                me.pc = if me.keep < me.claimed {
                    Pc::GiveBack
                } else {
                    Pc::Take
                };
            }
            (Protocol::Bound, Pc::GiveBack) => {
                s.word7 -= me.claimed - me.keep;
                me.overshot = true;
                me.pc = if me.keep > 0 { Pc::Take } else { Pc::Done };
            }
            (Protocol::Bound, Pc::Take) => {
                s.producer += me.keep;
                me.pc = Pc::Done;
            }
            (Protocol::InFlight { .. }, Pc::Claim) => {
                me.claimed = s.word7;
                s.word7 += total;
                me.pc = Pc::ReadConsumer;
            }
            (Protocol::InFlight { .. }, Pc::ReadProducer) => {
                me.keep = s.producer;
                me.pc = Pc::Check;
            }
            (Protocol::InFlight { .. }, Pc::Check) => {
                let fits =
                    me.consumer <= me.keep && me.keep + me.claimed + total - me.consumer <= aux;
                if fits {
                    s.producer += total;
                    me.took = Some(total);
                    me.pc = Pc::GiveBack;
                } else if me.claimed != 0 && me.tries > 1 {
                    s.word7 -= total;
                    me.tries -= 1;
                    me.pc = Pc::Claim;
                } else {
                    me.took = Some(0);
                    me.pc = Pc::GiveBack;
                }
            }
            (Protocol::InFlight { .. }, Pc::GiveBack) => {
                s.word7 -= total;
                me.pc = Pc::Done;
            }
            (p, pc) => unreachable!("{p:?} has no step {pc:?}"),
        }
        s
    }

    /// Every interleaving from `start`; panics on a broken promise.
    fn explore(&self, start: State) -> Outcome {
        let aux = self.aux;
        let all: u64 = self.lanes.iter().flat_map(|l| l.iter()).sum();
        let room_for_all = start.consumer + aux >= start.producer + all;
        let mut seen: HashSet<State, BuildHasherDefault<Fx>> = HashSet::default();
        let mut stack = vec![start];
        let mut out = Outcome::default();
        while let Some(s) = stack.pop() {
            if !seen.insert(s) {
                continue;
            }
            // The ring's promise: no byte is handed out twice, none the host has not freed
            // (it zeroed them before it moved the consumer).
            assert!(
                s.producer <= s.consumer + aux,
                "the producer passed consumer + aux: {s:?}"
            );
            if self.protocol == Protocol::Bound {
                assert!(
                    s.word7 >= s.producer,
                    "the bound fell below the producer: {s:?}"
                );
            }
            let live: Vec<usize> = (0..self.lanes.len())
                .filter(|&k| s.leaders[k].pc != Pc::Done)
                .collect();
            if live.is_empty() && s.freed {
                out.ends += 1;
                self.judge(&start, &s, room_for_all, &mut out);
                continue;
            }
            if !s.freed {
                stack.push(self.free(&s));
            }
            for k in live {
                stack.push(self.step(&s, k));
            }
        }
        out
    }

    /// The checks of one terminal state.
    fn judge(&self, start: &State, s: &State, room_for_all: bool, out: &mut Outcome) {
        let at_rest = match self.protocol {
            Protocol::Bound => s.producer,
            Protocol::InFlight { .. } => 0,
        };
        assert_eq!(s.word7, at_rest, "a claim was not given back: {s:?}");
        let took: Vec<u64> = s.leaders[..self.lanes.len()]
            .iter()
            .map(|l| l.took.expect("decided"))
            .collect();
        assert_eq!(
            s.producer,
            start.producer + took.iter().sum::<u64>(),
            "{s:?}"
        );
        let whole = |k: usize| took[k] == self.lanes[k].iter().sum::<u64>();
        for (k, &t) in took.iter().enumerate() {
            assert_eq!(t, prefix(self.lanes[k], t), "not whole records: {s:?}");
            if room_for_all && !whole(k) {
                out.needless_drop = true;
            }
        }
        let late: Vec<usize> = (0..took.len()).filter(|&k| s.leaders[k].late).collect();
        let late_bytes: u64 = late.iter().flat_map(|&k| self.lanes[k].iter()).sum();
        if late_bytes <= self.host_frees && late.iter().any(|&k| !whole(k)) {
            out.late_leader_dropped = true;
        }
        let free_left = s.consumer + self.aux - s.producer;
        let overshoot = s.leaders.iter().any(|l| l.overshot);
        for (k, &t) in took.iter().enumerate() {
            // The first lane it did not take.
            let mut end = 0;
            let next = self.lanes[k].iter().find(|&&b| {
                end += b;
                end > t
            });
            if next.is_some_and(|&b| b <= free_left) && !overshoot && self.host_frees == 0 {
                out.unexplained_drop = true;
            }
        }
    }
}

/// Rings with room for everyone, room for some, room for none; groups of one lane and of
/// several; positions near the start and far along (the checks are on positions, not
/// offsets): (aux, lanes, producer, consumer).
fn settings() -> Vec<(u64, Vec<&'static [u64]>, u64, u64)> {
    vec![
        (8, vec![&[3], &[3], &[2]], 0, 0),
        (8, vec![&[3], &[3], &[3]], 0, 0),
        (8, vec![&[2, 2], &[2, 2], &[4]], 20, 16),
        (8, vec![&[8], &[1]], 5, 5),
        (16, vec![&[5], &[5], &[5]], 100, 96),
        (8, vec![&[3, 3, 3], &[2]], 0, 0),
        (8, vec![&[1, 2, 3], &[2, 2]], 3, 0),
    ]
}

/// The shipped protocol with and without a host step that frees 4 bytes; the old one
/// without (its exploration with the retry and a host step is much larger).
#[test]
fn claims_never_let_the_producer_pass_the_consumer_plus_the_ring() {
    let runs = [(Protocol::Bound, 0), (Protocol::Bound, 4)]
        .into_iter()
        .chain([1, OLD_TRIES].map(|tries| (Protocol::InFlight { tries }, 0)));
    for (protocol, host_frees) in runs {
        for (aux, lanes, producer, consumer) in settings() {
            let set = Setting {
                aux,
                lanes: &lanes,
                protocol,
                host_frees,
            };
            let out = set.explore(set.start(producer, consumer));
            assert!(out.ends > 0, "{protocol:?} {lanes:?}");
        }
    }
}

#[test]
fn with_the_bound_no_one_drops_when_everything_fits() {
    for (aux, lanes, producer, consumer) in settings() {
        for host_frees in [0, 4] {
            let set = Setting {
                aux,
                lanes: &lanes,
                protocol: Protocol::Bound,
                host_frees,
            };
            let out = set.explore(set.start(producer, consumer));
            assert!(out.ends > 0 && !out.needless_drop, "{lanes:?}");
        }
    }
}

#[test]
fn the_in_flight_word_counted_a_claim_twice() {
    // Three leaders whose bytes fill the ring exactly: some interleaving makes one drop,
    // because it claimed while another's claim was in flight and read the producer after
    // that other moved it; the retry narrowed the window (a leader dropped only after
    // claiming `tries` times), it did not close it.
    let lanes: [&[u64]; 3] = [&[3], &[3], &[2]];
    for tries in [1, OLD_TRIES] {
        let set = Setting {
            aux: 8,
            lanes: &lanes,
            protocol: Protocol::InFlight { tries },
            host_frees: 0,
        };
        assert!(set.explore(set.start(0, 0)).needless_drop, "tries {tries}");
    }
}

/// The `ring_live` failure in small: the ring is full, leaders come to it, the host frees
/// it once. A leader that read the consumer after that must get its records whenever all
/// such leaders' records fit in what the host freed, whatever the leaders that saw the
/// ring full do meanwhile.
#[test]
fn leaders_that_see_the_host_free_the_ring_get_it() {
    let bound = Protocol::Bound;
    let (once, old) = (
        Protocol::InFlight { tries: 1 },
        Protocol::InFlight { tries: OLD_TRIES },
    );
    for (aux, lanes, protocols) in [
        (8, vec![&[4][..], &[4], &[4]], vec![bound, once, old]),
        (8, vec![&[2, 2][..], &[3], &[3]], vec![bound, once]),
        (16, vec![&[8][..], &[8], &[8]], vec![bound, once]),
    ] {
        for protocol in protocols {
            let set = Setting {
                aux,
                lanes: &lanes,
                protocol,
                host_frees: aux,
            };
            // Full: the producer one ring past the consumer, far along.
            let out = set.explore(set.start(5 * aux, 4 * aux));
            // With the bound, leaders that saw the ring full claim nothing, so they cannot
            // stand in the way; with the in-flight word their claims (and retries) were
            // counted by every later check, and a leader that saw the freed ring dropped.
            assert_eq!(
                out.late_leader_dropped,
                protocol != Protocol::Bound,
                "{protocol:?} {lanes:?}"
            );
        }
    }
}

/// Without the host, a leader drops a record that the ring could still hold only while
/// another leader's claim was too large (made with a bound read before other claims):
/// every such state in the model has a claim given back in part.
#[test]
fn with_the_bound_a_drop_with_room_left_needs_a_claim_too_large() {
    for (aux, lanes, producer, consumer) in settings() {
        let set = Setting {
            aux,
            lanes: &lanes,
            protocol: Protocol::Bound,
            host_frees: 0,
        };
        let out = set.explore(set.start(producer, consumer));
        assert!(!out.unexplained_drop, "{lanes:?}");
    }
}

/// A group whose lanes do not all fit keeps the lowest lanes that do (whole records), as
/// the PTX's second ballot (runtime) or `min(k0, room / T)` (inlined output) does.
#[test]
fn with_the_bound_a_group_keeps_its_lowest_lanes_that_fit() {
    for (lanes, producer, want) in [
        (&[3u64, 3, 3][..], 0, 6),
        (&[3, 3, 3][..], 3, 3),
        (&[1, 2, 3][..], 3, 3),
        (&[8][..], 1, 0),
    ] {
        let group = [lanes];
        let set = Setting {
            aux: 8,
            lanes: &group,
            protocol: Protocol::Bound,
            host_frees: 0,
        };
        let mut s = set.start(producer, 0);
        while s.leaders[0].pc != Pc::Done {
            s = set.step(&s, 0);
        }
        assert_eq!(
            (s.leaders[0].took, s.producer, s.word7),
            (Some(want), producer + want, producer + want),
            "{lanes:?} from {producer}"
        );
    }
}
