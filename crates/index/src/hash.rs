//! One fixed hash for the crate's tables: fast on short words, and without random state, so a
//! table built twice from the same words is the same.

/// FNV-1a as a [`std::hash::Hasher`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct FnvHasher(u64);

impl Default for FnvHasher {
    fn default() -> Self {
        FnvHasher(0xcbf2_9ce4_8422_2325)
    }
}

impl std::hash::Hasher for FnvHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }
}

pub(crate) type Fnv = std::hash::BuildHasherDefault<FnvHasher>;

/// FNV-1a of a byte string.
pub(crate) fn fnv(bytes: &[u8]) -> u64 {
    use std::hash::Hasher as _;
    let mut h = FnvHasher::default();
    h.write(bytes);
    h.finish()
}
