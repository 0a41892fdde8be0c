//! The ring reservation's claim protocol (runtime-ptx/src/ringbuf.rs, module doc, step 3),
//! checked over every interleaving of a few leaders on a sequentially consistent model.
//!
//! Each leader wants `G` bytes and, in the order the PTX does it: claims `G` on the
//! in-flight word (`atom.add`, which returns the claims already in flight), reads the
//! consumer, reads the producer, checks `producer + in_flight + G - consumer <= aux`, and
//! either takes `[producer, producer + G)` (`atom.add` on the producer) or, when the check
//! failed while other claims were in flight and tries are left, gives the claim back and
//! claims again; finally it gives the claim back. The model explores every order of these
//! steps across leaders (depth-first, states memoised) and checks what the protocol
//! promises: the producer never passes `consumer + aux`, every claim is given back, the
//! producer ends at the sum of what was taken; and it shows why the retry exists and what
//! it leaves: a check can count a leader's bytes twice, so without the retry a leader can
//! drop with room for everyone, and with it only after [`CLAIM_TRIES`] claims.
//!
//! It also checks the alternative the retry stands in for (not what the runtime does
//! today): word 7 as a bound, the producer plus every claim in flight, which a leader
//! advances by `G` with one `atom.add` (fits iff `old + G - consumer <= aux`), then takes
//! its position from the producer, or gives `G` back when it did not fit. One word holds
//! both, so nothing is counted twice and nobody drops when everything fits; the price is
//! that a host must set word 7 to the producer whenever it sets the producer.

use bpf2ptx_runtime::ringbuf::CLAIM_TRIES;
use std::collections::HashSet;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Pc {
    Claim,
    ReadConsumer,
    ReadProducer,
    Check,
    /// Bound protocol: the position, `atom.add` on the producer.
    Take,
    GiveBack,
    Done,
}

/// Which claim protocol the leaders follow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Protocol {
    /// Today's: word 7 counts claims in flight; `tries` claims at most.
    InFlight { tries: u32 },
    /// Word 7 is producer + claims in flight.
    Bound,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Leader {
    pc: Pc,
    /// What the claim's `atom.add` returned: other leaders' claims in flight.
    others: u64,
    consumer: u64,
    producer: u64,
    /// Claims left, counting the current one.
    tries: u32,
    /// Whether it took its bytes (once it has decided).
    took: Option<bool>,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct State {
    producer: u64,
    consumer: u64,
    /// Word 7: claims in flight, or (bound protocol) the bound.
    in_flight: u64,
    leaders: Vec<Leader>,
}

/// A run's setting: ring bytes, each leader's bytes, the protocol.
struct Setting<'a> {
    aux: u64,
    want: &'a [u64],
    protocol: Protocol,
}

/// What every complete interleaving showed.
#[derive(Default, Debug)]
struct Outcome {
    /// Terminal states reached (distinct).
    ends: usize,
    /// Some leader dropped although every leader's bytes fit the ring.
    needless_drop: bool,
    /// Such a drop happened with claims left (the retry should have tried again).
    needless_drop_with_tries_left: bool,
}

impl Setting<'_> {
    fn start(&self, producer: u64, consumer: u64) -> State {
        State {
            producer,
            consumer,
            in_flight: match self.protocol {
                Protocol::InFlight { .. } => 0,
                Protocol::Bound => producer,
            },
            leaders: self
                .want
                .iter()
                .map(|_| Leader {
                    pc: Pc::Claim,
                    others: 0,
                    consumer: 0,
                    producer: 0,
                    tries: match self.protocol {
                        Protocol::InFlight { tries } => tries,
                        Protocol::Bound => 1,
                    },
                    took: None,
                })
                .collect(),
        }
    }

    /// Leader `k`'s next step (each one atomic on the shared words).
    fn step(&self, s: &State, k: usize) -> State {
        let mut s = s.clone();
        let g = self.want[k];
        let me = &mut s.leaders[k];
        match me.pc {
            Pc::Claim => {
                me.others = s.in_flight;
                s.in_flight += g;
                me.pc = Pc::ReadConsumer;
            }
            Pc::ReadConsumer if self.protocol == Protocol::Bound => {
                // `others` is the bound before this claim.
                me.consumer = s.consumer;
                if me.consumer <= me.others && me.others + g - me.consumer <= self.aux {
                    me.took = Some(true);
                    me.pc = Pc::Take;
                } else {
                    me.took = Some(false);
                    me.pc = Pc::GiveBack;
                }
            }
            Pc::ReadConsumer => {
                me.consumer = s.consumer;
                me.pc = Pc::ReadProducer;
            }
            Pc::Take => {
                s.producer += g;
                me.pc = Pc::Done;
            }
            Pc::ReadProducer => {
                me.producer = s.producer;
                me.pc = Pc::Check;
            }
            Pc::Check => {
                let fits = me.consumer <= me.producer
                    && me.producer + me.others + g - me.consumer <= self.aux;
                if fits {
                    s.producer += g;
                    me.took = Some(true);
                    me.pc = Pc::GiveBack;
                } else if me.others != 0 && me.tries > 1 {
                    s.in_flight -= g;
                    me.tries -= 1;
                    me.pc = Pc::Claim;
                } else {
                    me.took = Some(false);
                    me.pc = Pc::GiveBack;
                }
            }
            Pc::GiveBack => {
                s.in_flight -= g;
                me.pc = Pc::Done;
            }
            Pc::Done => unreachable!("a finished leader takes no step"),
        }
        s
    }

    /// Every interleaving from `start`; panics on a broken promise.
    fn explore(&self, start: State) -> Outcome {
        let room_for_all =
            start.consumer + self.aux >= start.producer + self.want.iter().sum::<u64>();
        let mut seen = HashSet::new();
        let mut stack = vec![start.clone()];
        let mut out = Outcome::default();
        while let Some(s) = stack.pop() {
            if !seen.insert(s.clone()) {
                continue;
            }
            assert!(
                s.producer <= s.consumer + self.aux,
                "the producer passed consumer + aux: {s:?}"
            );
            if self.protocol == Protocol::Bound {
                assert!(
                    s.in_flight >= s.producer,
                    "the bound fell below the producer"
                );
            }
            let live: Vec<usize> = (0..s.leaders.len())
                .filter(|&k| s.leaders[k].pc != Pc::Done)
                .collect();
            if live.is_empty() {
                out.ends += 1;
                let at_rest = match self.protocol {
                    Protocol::InFlight { .. } => 0,
                    Protocol::Bound => s.producer,
                };
                assert_eq!(s.in_flight, at_rest, "a claim was not given back: {s:?}");
                let taken: u64 = (0..s.leaders.len())
                    .filter(|&k| s.leaders[k].took == Some(true))
                    .map(|k| self.want[k])
                    .sum();
                assert_eq!(s.producer, start.producer + taken, "{s:?}");
                for l in &s.leaders {
                    if room_for_all && l.took == Some(false) {
                        out.needless_drop = true;
                        out.needless_drop_with_tries_left |= l.tries > 1;
                    }
                }
                continue;
            }
            for k in live {
                stack.push(self.step(&s, k));
            }
        }
        out
    }
}

/// Rings with room for everyone, room for some, room for none; positions near the start
/// and far along (the check is on positions, not offsets).
fn settings() -> Vec<(u64, Vec<u64>, u64, u64)> {
    vec![
        (8, vec![3, 3, 2], 0, 0),
        (8, vec![3, 3, 3], 0, 0),
        (8, vec![4, 4, 4], 20, 16),
        (8, vec![8, 1], 5, 5),
        (16, vec![5, 5, 5], 100, 96),
    ]
}

#[test]
fn claims_never_let_the_producer_pass_the_consumer_plus_the_ring() {
    let protocols = [1, 2, CLAIM_TRIES]
        .map(|tries| Protocol::InFlight { tries })
        .into_iter()
        .chain([Protocol::Bound]);
    for protocol in protocols {
        for (aux, want, producer, consumer) in settings() {
            let set = Setting {
                aux,
                want: &want,
                protocol,
            };
            let out = set.explore(set.start(producer, consumer));
            assert!(out.ends > 0, "{want:?}");
        }
    }
}

#[test]
fn without_the_retry_a_check_can_count_a_claim_twice() {
    // Three leaders whose bytes fill the ring exactly: some interleaving makes one drop,
    // because it claimed while another's claim was in flight and read the producer after
    // that other moved it.
    let want = [3, 3, 2];
    let once = Setting {
        aux: 8,
        want: &want,
        protocol: Protocol::InFlight { tries: 1 },
    };
    assert!(once.explore(once.start(0, 0)).needless_drop);
}

#[test]
fn with_the_retry_a_needless_drop_takes_every_try() {
    // The retry cannot rule the double count out (another leader may stay between its
    // producer add and its give-back for as long as it likes), but a leader only drops
    // with room for everyone after claiming CLAIM_TRIES times, every time with another
    // claim in flight.
    for (aux, want, producer, consumer) in settings() {
        let set = Setting {
            aux,
            want: &want,
            protocol: Protocol::InFlight { tries: CLAIM_TRIES },
        };
        let out = set.explore(set.start(producer, consumer));
        assert!(!out.needless_drop_with_tries_left, "{want:?}");
    }
    // And such a schedule still exists: the retry narrows the window, it does not close it.
    let want = [3, 3, 2];
    let set = Setting {
        aux: 8,
        want: &want,
        protocol: Protocol::InFlight { tries: CLAIM_TRIES },
    };
    assert!(set.explore(set.start(0, 0)).needless_drop);
}

#[test]
fn a_bound_word_never_drops_when_everything_fits() {
    for (aux, want, producer, consumer) in settings() {
        let set = Setting {
            aux,
            want: &want,
            protocol: Protocol::Bound,
        };
        let out = set.explore(set.start(producer, consumer));
        assert!(out.ends > 0 && !out.needless_drop, "{want:?}");
    }
}
