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

use bpf2ptx_runtime::ringbuf::CLAIM_TRIES;
use std::collections::HashSet;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Pc {
    Claim,
    ReadConsumer,
    ReadProducer,
    Check,
    GiveBack,
    Done,
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
    in_flight: u64,
    leaders: Vec<Leader>,
}

/// A run's setting: ring bytes, each leader's bytes, claims per leader.
struct Setting<'a> {
    aux: u64,
    want: &'a [u64],
    tries: u32,
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
            in_flight: 0,
            leaders: self
                .want
                .iter()
                .map(|_| Leader {
                    pc: Pc::Claim,
                    others: 0,
                    consumer: 0,
                    producer: 0,
                    tries: self.tries,
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
            Pc::ReadConsumer => {
                me.consumer = s.consumer;
                me.pc = Pc::ReadProducer;
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
            let live: Vec<usize> = (0..s.leaders.len())
                .filter(|&k| s.leaders[k].pc != Pc::Done)
                .collect();
            if live.is_empty() {
                out.ends += 1;
                assert_eq!(s.in_flight, 0, "a claim was not given back: {s:?}");
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
    for tries in [1, 2, CLAIM_TRIES] {
        for (aux, want, producer, consumer) in settings() {
            let set = Setting {
                aux,
                want: &want,
                tries,
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
        tries: 1,
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
            tries: CLAIM_TRIES,
        };
        let out = set.explore(set.start(producer, consumer));
        assert!(!out.needless_drop_with_tries_left, "{want:?}");
    }
    // And such a schedule still exists: the retry narrows the window, it does not close it.
    let want = [3, 3, 2];
    let set = Setting {
        aux: 8,
        want: &want,
        tries: CLAIM_TRIES,
    };
    assert!(set.explore(set.start(0, 0)).needless_drop);
}
