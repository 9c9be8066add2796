//! The keyed permutation of `0..n` behind every shuffled order: a
//! six-round Feistel network on `k`-bit numbers (`2^k` the smallest power
//! of two at least `n`), cycle-walked into `0..n` (spec/sampler.md §2).

/// SplitMix64's increment, the golden ratio in 64 bits.
const GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

/// Rounds of the Feistel network.
pub const ROUNDS: usize = 6;

/// SplitMix64's output function (Stafford's "Mix13" variant): a bijection
/// on `u64` that mixes every input bit into every output bit.
pub fn mix(z: u64) -> u64 {
    let z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    let z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// One step of SplitMix64 from state `x`: `mix(x + GAMMA)`.
pub fn splitmix(x: u64) -> u64 {
    mix(x.wrapping_add(GAMMA))
}

/// The key of one epoch's order: `splitmix(splitmix(seed) ^ epoch)`.
pub fn epoch_key(seed: u64, epoch: u64) -> u64 {
    splitmix(splitmix(seed) ^ epoch)
}

/// The key of one permutation of an epoch, told apart by `label`: 0 for
/// the order of the samples (or of the chunks), `c + 1` for the order
/// inside chunk `c`: `splitmix(epoch_key ^ splitmix(label))`.
pub fn order_key(epoch_key: u64, label: u64) -> u64 {
    splitmix(epoch_key ^ splitmix(label))
}

/// `2^bits - 1` (`bits <= 64`).
fn mask(bits: u32) -> u64 {
    u64::MAX.checked_shr(64 - bits).unwrap_or(0)
}

/// A keyed bijection of `0..n`, computed one index at a time in constant
/// memory, identical on every platform for the same `(key, n)`.
///
/// A value is the Feistel network applied to the index, then applied again
/// while the result is `n` or more (cycle walking). Because `2^k < 2n`
/// (for `n >= 2`), a walk takes fewer than 2 applications on average; it
/// ends at the latest after `2^k - n + 1` (the values out of range are
/// distinct on the cycle), and a walk longer than `L` has probability
/// about `2^-L`.
///
/// ```
/// use binfmt_taridx::sampler::Permutation;
///
/// let p = Permutation::new(7, 10);
/// let mut values: Vec<u64> = (0..10).filter_map(|i| p.get(i)).collect();
/// assert_eq!(p.position_of(values[3]), Some(3));
/// values.sort();
/// assert_eq!(values, (0..10).collect::<Vec<_>>());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Permutation {
    n: u64,
    /// `a = ceil(k / 2)`: the bits of the left (high) half.
    high_bits: u32,
    /// `b = floor(k / 2)`: the bits of the right (low) half.
    low_bits: u32,
    round_keys: [u64; ROUNDS],
}

impl Permutation {
    /// The permutation of `0..n` keyed by `key`.
    pub fn new(key: u64, n: u64) -> Self {
        let bits = match n {
            0 | 1 => 0,
            _ => 64 - (n - 1).leading_zeros(),
        };
        let mut round_keys = [0; ROUNDS];
        let mut state = key;
        for round_key in &mut round_keys {
            state = state.wrapping_add(GAMMA);
            *round_key = mix(state);
        }
        Self {
            n,
            high_bits: bits.div_ceil(2),
            low_bits: bits / 2,
            round_keys,
        }
    }

    /// How many indices it permutes.
    pub fn len(&self) -> u64 {
        self.n
    }

    /// Whether it permutes nothing.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// The value at index `i`, `None` when `i >= n`.
    pub fn get(&self, i: u64) -> Option<u64> {
        self.walk(i).map(|(value, _)| value)
    }

    /// The index holding `value` (the inverse of [`get`](Self::get)),
    /// `None` when `value >= n`.
    pub fn position_of(&self, value: u64) -> Option<u64> {
        if value >= self.n {
            return None;
        }
        let mut x = self.backward(value);
        while x >= self.n {
            x = self.backward(x);
        }
        Some(x)
    }

    /// The value at index `i` and the network applications it took.
    pub(crate) fn walk(&self, i: u64) -> Option<(u64, u64)> {
        if i >= self.n {
            return None;
        }
        let mut x = self.forward(i);
        let mut steps = 1;
        while x >= self.n {
            x = self.forward(x);
            steps += 1;
        }
        Some((x, steps))
    }

    /// The network on `0..2^k`: each round maps `x = L·2^b + R` to
    /// `R·2^a + (L xor (mix(R xor K_j) mod 2^a))`.
    fn forward(&self, mut x: u64) -> u64 {
        let (high, low) = (mask(self.high_bits), mask(self.low_bits));
        for &key in &self.round_keys {
            let left = x.checked_shr(self.low_bits).unwrap_or(0);
            let right = x & low;
            let f = mix(right ^ key) & high;
            x = (right.checked_shl(self.high_bits).unwrap_or(0)) | (left ^ f);
        }
        x
    }

    /// The inverse of [`forward`](Self::forward).
    fn backward(&self, mut y: u64) -> u64 {
        let (high, low) = (mask(self.high_bits), mask(self.low_bits));
        for &key in self.round_keys.iter().rev() {
            let right = y.checked_shr(self.high_bits).unwrap_or(0) & low;
            let f = mix(right ^ key) & high;
            let left = (y & high) ^ f;
            y = (left.checked_shl(self.low_bits).unwrap_or(0)) | right;
        }
        y
    }
}
