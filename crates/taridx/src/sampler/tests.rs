//! The orders against spec/sampler.md: its test vectors, the permutation
//! property (exhaustive up to 10^7, sampled up to 2^63 - 1), the chunk
//! layout, and the shares a resume deals.

use std::collections::HashSet;

use super::*;

const SPEC: &str = include_str!("../../../../spec/sampler.md");

/// A deterministic stream for choosing test positions (not the order's).
struct Stream(u64);

impl Stream {
    fn below(&mut self, bound: u64) -> u64 {
        self.0 = self.0.wrapping_add(1);
        ((u128::from(splitmix(self.0)) * u128::from(bound)) >> 64) as u64
    }
}

/// A row of the spec's test-vector table: seed, epoch, n, chunk size,
/// shard starts, the first values of the order.
type Vector = (u64, u64, u64, Option<u64>, Vec<u64>, Vec<u64>);

/// The rows of the spec's test-vector table.
fn vectors() -> Vec<Vector> {
    let table = SPEC
        .split("## 6. Test vectors")
        .nth(1)
        .expect("the spec's test vectors");
    let numbers = |cell: &str| -> Vec<u64> {
        cell.split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty() && *s != "-")
            .map(|s| s.parse().unwrap())
            .collect()
    };
    let mut rows = Vec::new();
    for line in table.lines().take_while(|l| !l.starts_with("## ")) {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let [_, seed, epoch, n, size, starts, values, _] = cells[..] else {
            continue;
        };
        let Ok(seed) = seed.parse() else { continue };
        let size = (size != "-").then(|| size.parse().unwrap());
        rows.push((
            seed,
            epoch.parse().unwrap(),
            n.parse().unwrap(),
            size,
            numbers(starts),
            numbers(values),
        ));
    }
    rows
}

#[test]
fn the_mixer_is_splitmix64() {
    // SplitMix64 seeded with 0: its first two outputs, as published.
    assert_eq!(splitmix(0), 0xE220_A839_7B1D_CDAF);
    assert_eq!(splitmix(0x9E37_79B9_7F4A_7C15), 0x6E78_9E6A_A1B9_65F4);
}

#[test]
fn the_spec_test_vectors_hold() {
    let rows = vectors();
    assert!(rows.len() >= 6, "{rows:?}");
    for (seed, epoch, n, size, starts, values) in rows {
        let shuffle = match size {
            Some(size) => Shuffle::Chunks {
                size,
                shard_starts: &starts,
            },
            None => Shuffle::Samples,
        };
        let order = EpochOrder::new(n, seed, epoch, shuffle).unwrap();
        let mut got = vec![0; values.len()];
        order.fill(0, 1, &mut got).unwrap();
        assert_eq!(
            got, values,
            "seed {seed} epoch {epoch} n {n} chunks {size:?} {starts:?}"
        );
    }
}

fn assert_bijection(p: &Permutation) {
    let n = p.len();
    let mut seen = vec![false; n as usize];
    for i in 0..n {
        let v = p.get(i).unwrap();
        assert!(
            !std::mem::replace(&mut seen[v as usize], true),
            "n {n}: {v} twice"
        );
        assert_eq!(p.position_of(v), Some(i));
    }
    assert_eq!(p.get(n), None);
    assert_eq!(p.position_of(n), None);
}

#[test]
fn small_permutations_are_bijections() {
    for key in [0, 1, 0xDEAD_BEEF, u64::MAX] {
        for n in 0..=700 {
            assert_bijection(&Permutation::new(key, n));
        }
        for bits in 10..=16 {
            for n in [(1 << bits) - 1, 1 << bits, (1 << bits) + 1] {
                assert_bijection(&Permutation::new(key, n));
            }
        }
    }
}

#[test]
fn ten_million_exhaustively() {
    let n = 10_000_000u64;
    let p = Permutation::new(order_key(epoch_key(0, 0), 0), n);
    let mut seen = vec![0u64; (n as usize).div_ceil(64)];
    let (mut longest, mut total) = (0, 0);
    for i in 0..n {
        let (v, steps) = p.walk(i).unwrap();
        let (word, bit) = ((v / 64) as usize, v % 64);
        assert!(seen[word] & (1 << bit) == 0, "{v} twice");
        seen[word] |= 1 << bit;
        longest = longest.max(steps);
        total += steps;
        if i % 1009 == 0 {
            assert_eq!(p.position_of(v), Some(i));
        }
    }
    // 2^24 / 10^7 = 1.68 applications expected; the longest walk is short.
    let mean = total as f64 / n as f64;
    eprintln!("n = 10^7: mean walk {mean:.3}, longest {longest}");
    assert!(mean < 2.0 && longest < 64, "mean {mean}, longest {longest}");
}

#[test]
fn large_permutations_sampled() {
    let mut stream = Stream(7);
    for n in [1_000_000_000, 1 << 40, (1 << 40) + 1, MAX_LEN] {
        for key in [0, 99] {
            let p = Permutation::new(key, n);
            let mut positions = HashSet::new();
            while positions.len() < 3000 {
                positions.insert(stream.below(n));
            }
            positions.extend([0, n - 1]);
            let mut values = HashSet::new();
            for &i in &positions {
                let v = p.get(i).unwrap();
                assert!(v < n && values.insert(v));
                assert_eq!(p.position_of(v), Some(i));
            }
        }
    }
}

#[test]
fn first_values_are_near_uniform() {
    // Over 10,000 seeds, g(0) of 10 samples (a 16-value network walked)
    // and g(5) of 1000 samples (binned by 100) land evenly.
    let mut small = [0u32; 10];
    let mut large = [0u32; 10];
    for seed in 0..10_000 {
        small[EpochOrder::new(10, seed, 0, Shuffle::Samples)
            .unwrap()
            .get(0)
            .unwrap() as usize] += 1;
        large[(EpochOrder::new(1000, seed, 3, Shuffle::Samples)
            .unwrap()
            .get(5)
            .unwrap()
            / 100) as usize] += 1;
    }
    for count in small.iter().chain(&large) {
        assert!((850..1150).contains(count), "{small:?} {large:?}");
    }
}

/// Each sample's chunk: `(run start + k·size)` cut at the runs' ends.
fn chunk_ids(n: u64, size: u64, starts: &[u64]) -> (Vec<u64>, Vec<u64>) {
    let mut bounds: Vec<u64> = starts.iter().copied().filter(|&s| 0 < s && s < n).collect();
    bounds.extend([0, n]);
    bounds.sort_unstable();
    bounds.dedup();
    let (mut ids, mut lens) = (Vec::new(), Vec::new());
    for pair in bounds.windows(2) {
        for start in (pair[0]..pair[1]).step_by(size as usize) {
            let len = size.min(pair[1] - start);
            ids.extend(std::iter::repeat_n(lens.len() as u64, len as usize));
            lens.push(len);
        }
    }
    (ids, lens)
}

fn assert_chunked(n: u64, size: u64, starts: &[u64], seed: u64) {
    let order = EpochOrder::new(
        n,
        seed,
        1,
        Shuffle::Chunks {
            size,
            shard_starts: starts,
        },
    )
    .unwrap();
    let (ids, lens) = chunk_ids(n, size, starts);
    assert_eq!(
        order.chunk_count(),
        Some(lens.len() as u64).filter(|_| n > 0)
    );
    let mut values = vec![0; n as usize];
    order.fill(0, 1, &mut values).unwrap();
    let mut seen = vec![false; n as usize];
    let mut chunks_seen = HashSet::new();
    let mut at = 0;
    while at < values.len() {
        let id = ids[values[at] as usize];
        assert!(chunks_seen.insert(id), "chunk {id} split");
        let len = lens[id as usize] as usize;
        for (k, &v) in values[at..at + len].iter().enumerate() {
            assert_eq!(
                ids[v as usize],
                id,
                "n {n} size {size}: position {} leaves chunk {id}",
                at + k
            );
            assert!(!std::mem::replace(&mut seen[v as usize], true));
            assert_eq!(order.position_of(v), Some((at + k) as u64));
        }
        at += len;
    }
}

#[test]
fn chunked_orders_keep_chunks_whole() {
    let mut stream = Stream(3);
    for n in [0, 1, 2, 5, 17, 100, 1000, 4097] {
        for size in [1, 2, 3, 4, 16, 1000, 5000] {
            for shards in [0, 1, 3, 40] {
                let starts: Vec<u64> = (0..shards).map(|_| stream.below(n.max(1) + 2)).collect();
                assert_chunked(n, size, &starts, n ^ size);
            }
        }
    }
    let starts: Vec<u64> = (0..60).map(|_| stream.below(1_000_000)).collect();
    assert_chunked(1_000_000, 1000, &starts, 5);
    assert_chunked(1_000_000, 7, &starts, 6);
}

#[test]
fn large_chunked_orders_sampled() {
    let n = 1u64 << 40;
    let starts: Vec<u64> = (1..1000).map(|k| k * 1_099_000_000 + k % 7).collect();
    let order = EpochOrder::new(
        n,
        11,
        2,
        Shuffle::Chunks {
            size: 4096,
            shard_starts: &starts,
        },
    )
    .unwrap();
    let mut stream = Stream(5);
    let mut values = HashSet::new();
    for _ in 0..3000 {
        let i = stream.below(n);
        let v = order.get(i).unwrap();
        assert!(v < n && values.insert(v));
        assert_eq!(order.position_of(v), Some(i));
    }
    // A sample's chunk (4096 from its run's start, cut at the next run)
    // fills consecutive positions around it.
    for _ in 0..40 {
        let v = order.get(stream.below(n)).unwrap();
        let run = starts
            .iter()
            .copied()
            .filter(|&s| s <= v)
            .max()
            .unwrap_or(0);
        let end = starts.iter().copied().find(|&s| s > v).unwrap_or(n);
        let chunk_start = run + (v - run) / 4096 * 4096;
        let chunk_end = end.min(chunk_start + 4096);
        let mut positions: Vec<u64> = (chunk_start..chunk_end)
            .map(|s| order.position_of(s).unwrap())
            .collect();
        positions.sort_unstable();
        assert_eq!(
            positions.last().unwrap() - positions[0] + 1,
            chunk_end - chunk_start
        );
    }
}

#[test]
fn shares_deal_every_remaining_position_once() {
    for n in [0u64, 1, 7, 100, 101] {
        let order = EpochOrder::new(n, 1, 0, Shuffle::No).unwrap();
        for world in [1u64, 2, 3, 8, 200] {
            for start in [0, n / 3, n.saturating_sub(1), n] {
                for drop_last in [false, true] {
                    let mut dealt = Vec::new();
                    let mut lens = HashSet::new();
                    for rank in 0..world {
                        let share = order.share(start, rank, world, drop_last).unwrap();
                        lens.insert(share.len);
                        let mut out = vec![0; share.len as usize];
                        order.fill(share.first, share.stride, &mut out).unwrap();
                        dealt.extend(out);
                    }
                    assert_eq!(lens.len(), 1);
                    let remaining = n - start;
                    let expected = if drop_last {
                        remaining - remaining % world
                    } else {
                        remaining
                    };
                    let fresh: HashSet<u64> =
                        dealt.iter().copied().filter(|&v| v >= start).collect();
                    assert_eq!(
                        fresh.len() as u64,
                        expected,
                        "n {n} world {world} start {start}"
                    );
                    assert_eq!(dealt.len() as u64, lens.into_iter().next().unwrap() * world);
                }
            }
        }
    }
}

#[test]
fn fill_is_get_along_a_stride() {
    let starts = [5, 900, 901];
    for shuffle in [
        Shuffle::No,
        Shuffle::Samples,
        Shuffle::Chunks {
            size: 64,
            shard_starts: &starts,
        },
    ] {
        let order = EpochOrder::new(1000, 4, 9, shuffle).unwrap();
        let mut out = [0; 300];
        order.fill(995, 7, &mut out).unwrap();
        for (k, &v) in out.iter().enumerate() {
            assert_eq!(Some(v), order.get((995 + 7 * k as u64) % 1000));
        }
    }
}

#[test]
fn refusals() {
    assert!(matches!(
        EpochOrder::new(MAX_LEN + 1, 0, 0, Shuffle::Samples),
        Err(SamplerError::TooLong { .. })
    ));
    assert!(matches!(
        EpochOrder::new(
            5,
            0,
            0,
            Shuffle::Chunks {
                size: 0,
                shard_starts: &[]
            }
        ),
        Err(SamplerError::ZeroChunkSize)
    ));
    let order = EpochOrder::new(5, 0, 0, Shuffle::Samples).unwrap();
    assert!(matches!(
        order.share(0, 2, 2, false),
        Err(SamplerError::Rank { .. })
    ));
    assert!(matches!(
        order.share(0, 0, MAX_LEN + 1, false),
        Err(SamplerError::Rank { .. })
    ));
    assert!(matches!(
        order.share(6, 0, 1, false),
        Err(SamplerError::Start { .. })
    ));
    let empty = EpochOrder::new(0, 0, 0, Shuffle::Samples).unwrap();
    assert!(matches!(
        empty.fill(0, 1, &mut [0]),
        Err(SamplerError::Empty)
    ));
    assert_eq!(empty.share(0, 0, 3, false).unwrap().len, 0);
}
