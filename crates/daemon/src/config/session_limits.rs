//! `tools.session_pids_max` and `tools.session_memory_max`: what one session's commands may
//! use of the machine, read from the file (a pure resolution; the default memory share is
//! taken from the machine by the shell pools, not here).

use serde::{Deserialize, Serialize};

use codaris_tools::shell::SessionLimits;

use crate::error::ConfigError;

/// Fewer processes than this and a session could not run a pipeline's shell at all.
pub const MIN_PIDS_MAX: u64 = 16;
/// Less memory than this and a session could not start an interpreter.
pub const MIN_MEMORY_MAX: u64 = 64 * 1024 * 1024;

/// A size as written: bytes, or a number with a binary suffix (`8G`, `512M`, `1.5G`, `8GiB`).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(untagged)]
pub enum SizeToml {
    Bytes(u64),
    Text(String),
}

/// The two keys resolved; `None`s keep the defaults (4096 processes, 3/4 of the memory).
pub fn resolve(
    pids_max: Option<u64>,
    memory_max: Option<&SizeToml>,
    origin: &dyn Fn(&str) -> String,
) -> Result<SessionLimits, ConfigError> {
    let mut limits = SessionLimits::default();
    if let Some(pids) = pids_max {
        if pids < MIN_PIDS_MAX {
            return Err(ConfigError::Invalid {
                key: origin("tools.session_pids_max"),
                reason: format!("must be at least {MIN_PIDS_MAX}"),
            });
        }
        limits.pids_max = pids;
    }
    if let Some(size) = memory_max {
        let key = || origin("tools.session_memory_max");
        let bytes = match size {
            SizeToml::Bytes(bytes) => Some(*bytes),
            SizeToml::Text(text) => parse_size(text),
        }
        .ok_or_else(|| ConfigError::Invalid {
            key: key(),
            reason: "must be a number of bytes or a size such as `8G` or `512M`".to_owned(),
        })?;
        if bytes < MIN_MEMORY_MAX {
            return Err(ConfigError::Invalid {
                key: key(),
                reason: "must be at least `64M`".to_owned(),
            });
        }
        limits.memory_max = Some(bytes);
    }
    Ok(limits)
}

/// `8G`, `8GiB`, `8 GB`, `512m`, `1.5G`, `1073741824`: binary units (K, M, G, T).
fn parse_size(text: &str) -> Option<u64> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let unit = unit.trim().to_ascii_lowercase();
    let unit = unit.trim_end_matches("ib").trim_end_matches('b');
    let shift = match unit {
        "" => 0,
        "k" => 10,
        "m" => 20,
        "g" => 30,
        "t" => 40,
        _ => return None,
    };
    let scale = 1_u64 << shift;
    match number.split_once('.') {
        None => number.parse::<u64>().ok()?.checked_mul(scale),
        Some((whole, fraction)) if !fraction.is_empty() && fraction.len() <= 3 => {
            let whole = whole.parse::<u64>().ok()?.checked_mul(scale)?;
            let digits: u64 = fraction.parse().ok()?;
            let denominator = 10_u64.pow(u32::try_from(fraction.len()).ok()?);
            whole.checked_add(scale.checked_mul(digits)? / denominator)
        }
        Some(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_read_in_binary_units() {
        assert_eq!(parse_size("8G"), Some(8 << 30));
        assert_eq!(parse_size("8GiB"), Some(8 << 30));
        assert_eq!(parse_size("8 gb"), Some(8 << 30));
        assert_eq!(parse_size("512M"), Some(512 << 20));
        assert_eq!(parse_size("1.5G"), Some(3 << 29));
        assert_eq!(parse_size("1073741824"), Some(1 << 30));
        assert_eq!(parse_size("8X"), None);
        assert_eq!(parse_size("G"), None);
        assert_eq!(parse_size("1.G"), None);
        assert_eq!(parse_size("99999999999T"), None);
    }

    #[test]
    fn the_keys_resolve_or_say_what_is_wrong() {
        let origin = |key: &str| key.to_owned();
        assert_eq!(
            resolve(None, None, &origin).ok(),
            Some(SessionLimits::default())
        );
        let set = resolve(Some(200), Some(&SizeToml::Text("1G".into())), &origin).ok();
        assert_eq!(
            set,
            Some(SessionLimits {
                pids_max: 200,
                memory_max: Some(1 << 30),
            })
        );
        for (pids, size) in [
            (Some(3), None),
            (None, Some(SizeToml::Text("lots".into()))),
            (None, Some(SizeToml::Bytes(1024))),
        ] {
            assert!(
                matches!(
                    resolve(pids, size.as_ref(), &origin),
                    Err(ConfigError::Invalid { .. })
                ),
                "{pids:?} {size:?}"
            );
        }
    }
}
