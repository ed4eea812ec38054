//! The build's table of distinct words, looked up once per word occurrence.
//!
//! A `HashMap<String, _>` compares a found key through its pointer, a cache miss into a
//! separate allocation and a call to `memcmp` for each of the 270,000 occurrences a
//! 10,000-entry build meets, which made that comparison a tenth of the build's time. Words of
//! up to 15 bytes (nearly all) are kept as one integer instead, their bytes and their length,
//! so a lookup hashes two words and compares them in place; longer words keep a string key.

use std::collections::HashMap;

use crate::hash::Fixed;

/// Word -> its number, in the order first met.
#[derive(Debug, Default)]
pub(crate) struct Vocabulary {
    short: HashMap<u128, u32, Fixed>,
    long: HashMap<String, u32, Fixed>,
}

/// The bytes of a word of at most 15 bytes with its length in the top byte, so two different
/// words never meet (whatever bytes they hold), or `None` for a longer word.
fn packed(word: &str) -> Option<u128> {
    let bytes = word.as_bytes();
    if bytes.len() > 15 {
        return None;
    }
    let mut key = [0u8; 16];
    key[..bytes.len()].copy_from_slice(bytes);
    key[15] = bytes.len() as u8;
    Some(u128::from_le_bytes(key))
}

impl Vocabulary {
    pub(crate) fn with_capacity(capacity: usize) -> Vocabulary {
        Vocabulary {
            short: HashMap::with_capacity_and_hasher(capacity, Fixed::default()),
            long: HashMap::default(),
        }
    }

    pub(crate) fn get(&self, word: &str) -> Option<u32> {
        match packed(word) {
            Some(key) => self.short.get(&key).copied(),
            None => self.long.get(word).copied(),
        }
    }

    pub(crate) fn insert(&mut self, word: &str, id: u32) {
        match packed(word) {
            Some(key) => self.short.insert(key, id),
            None => self.long.insert(word.to_owned(), id),
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_of_every_length_are_told_apart() {
        let words = [
            "a",
            "a\0",
            "ab",
            "abcdefghijklmno",
            "abcdefghijklmnop",
            "abcdefghijklmnopq",
        ];
        let mut v = Vocabulary::with_capacity(0);
        for (i, w) in words.iter().enumerate() {
            assert_eq!(v.get(w), None);
            v.insert(w, i as u32);
        }
        for (i, w) in words.iter().enumerate() {
            assert_eq!(v.get(w), Some(i as u32), "{w:?}");
        }
        assert_eq!(v.get("abcdefghijklmn"), None);
    }

    #[test]
    fn packing_is_exact() {
        // Every string of up to 11 bytes over two letters and a NUL keys differently, and a
        // short word's key is its bytes, zero-padded, with its length on top.
        let mut seen = std::collections::HashSet::new();
        let mut count = 0;
        for len in 0..=11u32 {
            for n in 0..3u32.pow(len) {
                let word: String = (0..len)
                    .map(|i| ['a', 'b', '\0'][(n / 3u32.pow(i) % 3) as usize])
                    .collect();
                assert!(seen.insert(packed(&word)), "{word:?}");
                count += 1;
            }
        }
        assert_eq!(seen.len(), count);
        let mut bytes = [0u8; 16];
        bytes[..6].copy_from_slice(b"search");
        bytes[15] = 6;
        assert_eq!(packed("search"), Some(u128::from_le_bytes(bytes)));
    }
}
