//! The daemon's random secrets (the TCP bearer token, cards' answer secrets) and how they are
//! compared.

/// `bytes` bytes from the kernel's random source, as lowercase hex.
pub fn random_hex(bytes: usize) -> std::io::Result<String> {
    let mut buffer = vec![0u8; bytes];
    let mut filled = 0;
    while filled < buffer.len() {
        let rest = buffer.get_mut(filled..).unwrap_or_default();
        filled += rustix::rand::getrandom(rest, rustix::rand::GetRandomFlags::empty())?;
    }
    Ok(buffer.iter().map(|b| format!("{b:02x}")).collect())
}

/// Compares without stopping at the first different byte, so timing does not tell how much
/// of a guess was right.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_hex_of_the_asked_length_and_differ() -> std::io::Result<()> {
        let (a, b) = (random_hex(32)?, random_hex(32)?);
        assert_eq!(a.len(), 64);
        assert!(
            a.bytes()
                .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
        );
        assert_ne!(a, b);
        Ok(())
    }

    #[test]
    fn only_equal_bytes_compare_equal() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"ab"));
        assert!(constant_time_eq(b"", b""));
    }
}
