//! One fixed hash for the crate's tables: fast on short words, and without random state, so a
//! table built twice from the same words is the same.
//!
//! A build hashes every word occurrence of every entry once (about 400,000 at 10,000 entries),
//! so the hash takes eight bytes per multiply rather than FNV-1a's one: most words are one or
//! two chunks. A final mix spreads the product's high bits into the low ones, which hashbrown
//! picks its bucket from.

/// Multiplicative word-at-a-time hashing as a [`std::hash::Hasher`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct WordHasher(u64);

/// An odd constant with well-spread bits (from rustc-hash).
const K: u64 = 0xf135_7aea_2e62_a9c5;

impl Default for WordHasher {
    fn default() -> Self {
        WordHasher(0xcbf2_9ce4_8422_2325)
    }
}

impl WordHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(26) ^ word).wrapping_mul(K);
    }
}

impl std::hash::Hasher for WordHasher {
    #[inline]
    fn finish(&self) -> u64 {
        // The murmur3 finaliser: every input bit reaches the low bits.
        let mut h = self.0;
        h ^= h >> 33;
        h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^ (h >> 33)
    }

    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            self.add(u64::from_le_bytes(word));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut word = [0u8; 8];
            word[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(word));
        }
    }

    #[inline]
    fn write_u128(&mut self, value: u128) {
        // A packed word (see `vocabulary`): its two halves, without a pass through `write`.
        self.add(value as u64);
        self.add((value >> 64) as u64);
    }

    #[inline]
    fn write_u8(&mut self, byte: u8) {
        // `str` hashes end with 0xff: one more step rather than a pass through `write`.
        self.add(u64::from(byte));
    }
}

pub(crate) type Fixed = std::hash::BuildHasherDefault<WordHasher>;

/// The hash of a byte string, ended like a `str` hash so that a zero-padded chunk never makes
/// two lengths meet.
pub(crate) fn hash_bytes(bytes: &[u8]) -> u64 {
    use std::hash::Hasher as _;
    let mut h = WordHasher::default();
    h.write(bytes);
    h.write_u8(0xff);
    h.finish()
}
