//! Deterministic hashing: the same value hashes the same on every worker, in
//! every process and on every run, unlike `std`'s randomly seeded `RandomState`.

use std::hash::{Hash, Hasher};

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// The splitmix64 finalizer (Steele, Lea and Flood): a bijective 64-bit mixer.
#[inline]
pub fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// 64-bit FNV-1a of a byte string.
#[inline]
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut hash = FNV_OFFSET;
    for &byte in bytes {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(FNV_PRIME);
    }
    hash
}

/// A `Hasher` that is FNV-1a over the written bytes, finished with splitmix64
/// so that short keys still spread over all 64 bits. Integers are mixed in a
/// whole word at a time (one multiply rather than one per byte): fixed-size
/// keys hash several times faster, and the finalizer still mixes every bit.
#[derive(Debug, Clone, Copy)]
pub struct StableHasher(u64);

impl Default for StableHasher {
    fn default() -> Self {
        StableHasher(FNV_OFFSET)
    }
}

impl Hasher for StableHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 ^= u64::from(byte);
            self.0 = self.0.wrapping_mul(FNV_PRIME);
        }
    }
    #[inline]
    fn write_u64(&mut self, value: u64) {
        self.0 = (self.0 ^ value).wrapping_mul(FNV_PRIME);
    }
    #[inline]
    fn write_u8(&mut self, value: u8) {
        self.write_u64(u64::from(value));
    }
    #[inline]
    fn write_u16(&mut self, value: u16) {
        self.write_u64(u64::from(value));
    }
    #[inline]
    fn write_u32(&mut self, value: u32) {
        self.write_u64(u64::from(value));
    }
    #[inline]
    fn write_usize(&mut self, value: usize) {
        self.write_u64(value as u64);
    }
    #[inline]
    fn finish(&self) -> u64 {
        splitmix64(self.0)
    }
}

/// A `Hasher` for maps keyed by fingerprints, values that are already
/// hashes: one multiply and a shift (spreading even an unmixed fingerprint
/// over the bits hash tables use), where [`StableHasher`] mixes three times.
/// Other keys are hashed as FNV-1a over their bytes, correctly but slowly.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct FingerprintHasher(u64);

impl Hasher for FingerprintHasher {
    fn write(&mut self, bytes: &[u8]) {
        self.0 = fnv1a64(bytes) ^ self.0.rotate_left(5);
    }
    #[inline]
    fn write_u64(&mut self, value: u64) {
        self.0 = value;
    }
    #[inline]
    fn finish(&self) -> u64 {
        let spread = self.0.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        spread ^ (spread >> 32)
    }
}

/// The key fingerprint the pacts route on: identical for equal keys on every
/// worker and process.
///
/// ```
/// use equipoise::pkg::key_hash;
/// assert_eq!(key_hash("apple"), key_hash(&"apple".to_string()));
/// assert_ne!(key_hash("apple"), key_hash("pear"));
/// ```
#[inline]
pub fn key_hash<K: Hash + ?Sized>(key: &K) -> u64 {
    let mut hasher = StableHasher::default();
    key.hash(&mut hasher);
    hasher.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1a_matches_reference_vectors() {
        // Published FNV-1a 64 test vectors.
        assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a64(b"foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn integer_keys_spread_over_all_bits() {
        // Consecutive small integers land evenly on 8 buckets by the top bits.
        let mut buckets = [0u32; 8];
        for key in 0..8000u64 {
            buckets[(key_hash(&key) >> 61) as usize] += 1;
        }
        assert!(buckets.iter().all(|&count| (800..1200).contains(&count)), "{buckets:?}");
        assert_ne!(key_hash(&1u32), key_hash(&2u32));
    }

    #[test]
    fn splitmix_matches_reference_sequence() {
        // splitmix64 seeded with 0 yields 0xe220a8397b1dcdaf first: the
        // generator adds the golden gamma before mixing, as this finalizer does.
        assert_eq!(splitmix64(0), 0xe220_a839_7b1d_cdaf);
    }
}
