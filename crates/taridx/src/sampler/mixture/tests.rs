//! Mixtures against spec/mixture.md: its test vectors, the quotas, the
//! schedule's bound (every prefix) and balance (every window of 10,000
//! positions, around the period), draws as permutations of each source,
//! and every refusal.

use super::*;

const SPEC: &str = include_str!("../../../../../spec/mixture.md");

/// The rows of the spec's table headed `heading` (cells split on `|`).
fn table(heading: &str) -> Vec<Vec<String>> {
    let section = SPEC.split(heading).nth(1).unwrap_or_default();
    section
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .skip(2)
        .map(|l| {
            let cells: Vec<String> = l.split('|').map(|c| c.trim().to_string()).collect();
            cells[1..cells.len() - 1].to_vec()
        })
        .collect()
}

fn floats(cell: &str) -> Vec<f64> {
    cell.split(',').map(|v| v.trim().parse().unwrap()).collect()
}

fn integers(cell: &str) -> Vec<u64> {
    cell.split(',').map(|v| v.trim().parse().unwrap()).collect()
}

/// `n` weights from a deterministic stream, in `(0, 1]`.
fn random_weights(n: usize, salt: u64) -> Vec<f64> {
    (0..n as u64)
        .map(|i| (splitmix_f(salt ^ i) * 0.95) + 0.05)
        .collect()
}

fn splitmix_f(x: u64) -> f64 {
    (super::super::splitmix(x) >> 11) as f64 / (1u64 << 53) as f64
}

/// The weight sets the balance tests run over.
fn weight_sets() -> Vec<Vec<f64>> {
    vec![
        vec![1.0],
        vec![0.5, 0.5],
        vec![0.98, 0.01, 0.01],
        vec![1.0, 1.0, 1.0],
        vec![0.7, 0.2, 0.1],
        vec![0.999, 0.001],
        vec![1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0],
        vec![1e4, 1.0, 1.0, 1.0, 1.0],
        random_weights(10, 1),
        random_weights(100, 2),
        random_weights(1000, 3),
        vec![1.0; 4096],
    ]
}

#[test]
fn spec_quota_vectors() {
    let rows = table("### Quotas");
    assert!(rows.len() >= 4);
    for row in rows {
        let weights = floats(&row[0]);
        let expected: Vec<u32> = integers(&row[1]).into_iter().map(|q| q as u32).collect();
        assert_eq!(quotas(&weights).unwrap(), expected, "{weights:?}");
    }
}

#[test]
fn spec_schedule_vectors() {
    let rows = table("### Schedules");
    assert!(rows.len() >= 3);
    for row in rows {
        let weights = floats(&row[0]);
        let mix = Mixture::new(&weights, &vec![1; weights.len()], 0, 0).unwrap();
        let expected = integers(&row[1]);
        let got: Vec<u64> = (0..expected.len() as u64)
            .map(|i| mix.draw(i).unwrap().0 as u64)
            .collect();
        assert_eq!(got, expected, "{weights:?}");
    }
}

#[test]
fn spec_locate_vectors() {
    let rows = table("### Samples");
    assert!(rows.len() >= 3);
    for row in rows {
        let weights = floats(&row[0]);
        let lengths = integers(&row[1]);
        let samples: u64 = row[2].parse().unwrap();
        let (seed, epoch): (u64, u64) = (row[3].parse().unwrap(), row[4].parse().unwrap());
        let mix = Mixture::new(&weights, &lengths, samples, seed).unwrap();
        let expected: Vec<(usize, u64)> = row[5]
            .split(',')
            .map(|pair| {
                let (s, i) = pair.trim().split_once(':').unwrap();
                (s.parse().unwrap(), i.parse().unwrap())
            })
            .collect();
        let got: Vec<(usize, u64)> = (0..expected.len() as u64)
            .map(|p| mix.locate(epoch, p).unwrap())
            .collect();
        assert_eq!(got, expected, "{weights:?} {lengths:?}");
    }
}

#[test]
fn quotas_sum_to_the_period_and_follow_the_weights() {
    for weights in weight_sets() {
        let q = quotas(&weights).unwrap();
        assert_eq!(q.iter().map(|&q| u64::from(q)).sum::<u64>(), PERIOD);
        let total: f64 = weights.iter().sum();
        for (s, (&q, &w)) in q.iter().zip(&weights).enumerate() {
            let exact = w / total * PERIOD as f64;
            assert!(
                (f64::from(q) - exact).abs() < 1.0,
                "source {s}: {q} for {exact}"
            );
        }
    }
    // Ties go to the lower source: 3 equal weights leave 1 unit over.
    assert_eq!(quotas(&[1.0, 1.0, 1.0]).unwrap(), vec![21846, 21845, 21845]);
    // Zero weights get nothing; scale does not matter.
    assert_eq!(
        quotas(&[0.0, 2.0, 0.0, 2.0]).unwrap(),
        vec![0, 32768, 0, 32768]
    );
    assert_eq!(
        quotas(&[1e300, 3e300]).unwrap(),
        quotas(&[1e-300, 3e-300]).unwrap()
    );
}

/// Every prefix of the period obeys Tijdeman's bound; each source holds
/// its quota of slots, ranked 0, 1, ... in order.
#[test]
fn the_schedule_keeps_every_prefix_within_its_bound() {
    for weights in weight_sets() {
        let mix = Mixture::new(&weights, &vec![1; weights.len()], 0, 0).unwrap();
        let q = mix.quotas();
        let m = q.iter().filter(|&&q| q > 0).count() as f64;
        let bound = if m > 1.0 {
            1.0 - 1.0 / (2.0 * m - 2.0)
        } else {
            0.0
        };
        let mut counts = vec![0u64; q.len()];
        for t in 0..PERIOD {
            let slot = mix.table[t as usize];
            let s = usize::from(slot.source);
            assert_eq!(u64::from(slot.rank), counts[s]);
            counts[s] += 1;
            // Only the chosen source's count rises: the others' deviation
            // falls by q/P, checked at their next slot or at the period's end.
            let deviation = counts[s] as f64 - (t + 1) as f64 * f64::from(q[s]) / PERIOD as f64;
            assert!(
                deviation <= bound + 1e-9,
                "{weights:?} slot {t}: {deviation}"
            );
            let before = counts[s] as f64 - 1.0 - t as f64 * f64::from(q[s]) / PERIOD as f64;
            assert!(before >= -bound - 1e-9, "{weights:?} slot {t}: {before}");
        }
        let quotas: Vec<u64> = q.iter().map(|&q| u64::from(q)).collect();
        assert_eq!(counts, quotas);
    }
}

/// Every window of 10,000 positions, starting anywhere in the period (the
/// schedule repeats, so these are all windows): each source's count is
/// within 2 of 10,000 × its quota share and within 2.2 of 10,000 × its
/// weight, far inside the 1% (100 positions) promised.
#[test]
fn every_window_of_ten_thousand_is_balanced() {
    const L: u64 = 10_000;
    for weights in weight_sets() {
        let mix = Mixture::new(&weights, &vec![1; weights.len()], 0, 0).unwrap();
        let total: f64 = weights.iter().sum();
        let q = mix.quotas();
        let mut counts = vec![0i64; q.len()];
        for i in 0..L {
            counts[mix.draw(i).unwrap().0] += 1;
        }
        let mut worst = 0f64;
        // A source's count changes only when a window gains or loses one of
        // its positions: check those two after each step, and all at start.
        let check = |s: usize, count: i64, worst: &mut f64| {
            let by_quota = (count as f64 - L as f64 * f64::from(q[s]) / PERIOD as f64).abs();
            let by_weight = (count as f64 - L as f64 * weights[s] / total).abs();
            assert!(by_quota < 2.0, "{weights:?}: source {s} has {count}");
            assert!(by_weight < 2.2, "{weights:?}: source {s} has {count}");
            *worst = worst.max(by_weight);
        };
        for (s, &c) in counts.iter().enumerate() {
            check(s, c, &mut worst);
        }
        for start in 1..PERIOD {
            let (out, _) = mix.draw(start - 1).unwrap();
            let (into, _) = mix.draw(start + L - 1).unwrap();
            counts[out] -= 1;
            counts[into] += 1;
            check(out, counts[out], &mut worst);
            check(into, counts[into], &mut worst);
        }
        assert!(worst < 2.2);
    }
}

/// Draws `0..n` of a source are a permutation of its samples; draw `k`
/// and `k + n` are in different cycles, each a permutation.
#[test]
fn draws_permute_each_source_and_cycle() {
    let lengths = [7u64, 1, 1000, 33];
    let mix = Mixture::new(&[0.4, 0.1, 0.2, 0.3], &lengths, 20_000, 5).unwrap();
    let mut per_source: Vec<Vec<u64>> = vec![Vec::new(); lengths.len()];
    for p in 0..mix.len() {
        let (s, k) = mix.draw(p).unwrap();
        assert_eq!(k, per_source[s].len() as u64);
        let (s2, sample) = mix.locate(3, p).unwrap();
        assert_eq!(s2, s);
        per_source[s].push(sample);
    }
    for (s, draws) in per_source.iter().enumerate() {
        let n = lengths[s] as usize;
        assert!(draws.len() >= n, "source {s} drawn {} times", draws.len());
        let cycles: Vec<&[u64]> = draws.chunks(n).collect();
        for cycle in &cycles[..draws.len() / n] {
            let mut sorted = cycle.to_vec();
            sorted.sort_unstable();
            assert_eq!(sorted, (0..lengths[s]).collect::<Vec<_>>(), "source {s}");
        }
        if n > 20 && draws.len() >= 2 * n {
            assert_ne!(
                cycles[0], cycles[1],
                "source {s}: each cycle is a fresh order"
            );
        }
    }
    // Another epoch, another order of the same sources.
    let a: Vec<_> = (0..50).map(|p| mix.locate(0, p)).collect();
    let b: Vec<_> = (0..50).map(|p| mix.locate(1, p)).collect();
    assert_ne!(a, b);
    assert_eq!(mix.locate(0, mix.len()), None);
}

#[test]
fn fill_agrees_with_locate_and_big_positions_work() {
    let n = MAX_LEN;
    let mix = Mixture::new(&[1.0, 3.0], &[n, 12345], n, 99).unwrap();
    let first = n - 100;
    let (mut sources, mut samples) = (vec![0u32; 100], vec![0u64; 100]);
    mix.fill(2, first, &mut sources, &mut samples).unwrap();
    for (i, (&s, &v)) in sources.iter().zip(&samples).enumerate() {
        assert_eq!(mix.locate(2, first + i as u64), Some((s as usize, v)));
        assert!(v < [n, 12345][s as usize]);
    }
    assert!(mix.fill(2, first + 1, &mut sources, &mut samples).is_none());
    assert!(mix.fill(2, 0, &mut sources[..3], &mut samples).is_none());
}

#[test]
fn refusals_name_what_and_where() {
    let err = |w: &[f64], l: &[u64], n: u64| Mixture::new(w, l, n, 0).unwrap_err().to_string();
    assert!(err(&[], &[], 0).contains("at least one source"));
    assert!(err(&[1.0], &[1, 2], 0).contains("1 weights for 2 sources"));
    assert!(err(&[1.0, -1.0], &[1, 1], 0).contains("weight -1 of source 1"));
    assert!(err(&[1.0, f64::NAN], &[1, 1], 0).contains("weight NaN of source 1"));
    assert!(err(&[f64::INFINITY], &[1], 0).contains("weight inf of source 0"));
    assert!(err(&[0.0, 0.0], &[1, 1], 0).contains("every weight is 0"));
    assert!(err(&[1.0, 1e-6], &[1, 1], 0).contains("weight 0.000001 of source 1"));
    assert!(err(&[1.0, 1.0], &[4, 0], 0).contains("source 1 has no samples"));
    assert!(err(&[1.0], &[MAX_LEN + 1], 0).contains("source 0 has 9223372036854775808"));
    assert!(err(&[1.0], &[1], MAX_LEN + 1).contains("samples = 9223372036854775808"));
    let many = vec![1.0; MAX_SOURCES + 1];
    assert!(err(&many, &vec![1; many.len()], 0).contains("65537 sources"));
    // An empty source of weight 0 is fine: it is never drawn.
    let mix = Mixture::new(&[1.0, 0.0], &[3, 0], 10, 0).unwrap();
    assert!((0..10).all(|p| mix.locate(0, p).unwrap().0 == 0));
}
