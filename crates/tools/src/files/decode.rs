//! What a file's bytes are: a picture, text in some encoding, or another binary.

use encoding_rs::{Encoding, UTF_8, UTF_16BE, UTF_16LE, WINDOWS_1252};

/// The largest picture handed to a model (the providers' 5 MB base64 limit, decoded).
pub(crate) const MAX_IMAGE_BYTES: usize = 3_932_160;
/// The largest side, in pixels, a provider accepts.
pub(crate) const MAX_IMAGE_SIDE: usize = 8000;

/// A file's content, told by its bytes rather than its name.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Image { media_type: &'static str },
    Text,
    Binary { what: &'static str },
}

pub(crate) fn sniff(bytes: &[u8]) -> Kind {
    let image = |media_type| Kind::Image { media_type };
    let starts = |magic: &[u8]| bytes.starts_with(magic);
    if starts(b"\x89PNG\r\n\x1a\n") {
        return image("image/png");
    }
    if starts(b"\xff\xd8\xff") {
        return image("image/jpeg");
    }
    if starts(b"GIF87a") || starts(b"GIF89a") {
        return image("image/gif");
    }
    if starts(b"RIFF") && bytes.get(8..12) == Some(b"WEBP") {
        return image("image/webp");
    }
    // A byte-order mark says text before any NUL could say binary (UTF-16 is full of NULs).
    if starts(b"\xef\xbb\xbf") || starts(b"\xff\xfe") || starts(b"\xfe\xff") {
        return Kind::Text;
    }
    let binary = |what| Kind::Binary { what };
    let known: &[(&[u8], &str)] = &[
        (b"%PDF-", "PDF document"),
        (b"PK\x03\x04", "ZIP archive (or a format built on it)"),
        (b"\x1f\x8b", "gzip-compressed data"),
        (b"BZh", "bzip2-compressed data"),
        (b"\xfd7zXZ\x00", "xz-compressed data"),
        (b"\x28\xb5\x2f\xfd", "zstd-compressed data"),
        (b"7z\xbc\xaf\x27\x1c", "7-zip archive"),
        (b"\x7fELF", "ELF executable"),
        (b"BAM\x01", "BAM alignment file"),
        (b"CRAM", "CRAM alignment file"),
        (b"\x89HDF\r\n\x1a\n", "HDF5 file"),
        (b"SQLite format 3\x00", "SQLite database"),
        (b"BM", "BMP picture (not a format a model reads)"),
        (b"II*\x00", "TIFF picture (not a format a model reads)"),
        (b"MM\x00*", "TIFF picture (not a format a model reads)"),
    ];
    let head = &bytes[..bytes.len().min(8192)];
    for (magic, what) in known {
        // `BM` alone is too common a text start to trust without a NUL nearby.
        if starts(magic) && (*magic != b"BM" || head.contains(&0)) {
            return binary(what);
        }
    }
    if bytes.get(257..262) == Some(b"ustar") {
        return binary("tar archive");
    }
    if head.contains(&0) {
        return binary("binary data");
    }
    Kind::Text
}

/// Text as UTF-8, and the encoding it was converted from when it was not UTF-8 already.
pub(crate) fn decode_text(bytes: &[u8]) -> (String, Option<&'static str>) {
    if let Some((encoding, bom)) = Encoding::for_bom(bytes) {
        let (text, _) = encoding.decode_without_bom_handling(&bytes[bom..]);
        let from = (encoding != UTF_8).then(|| encoding_name(encoding));
        return (text.into_owned(), from);
    }
    match std::str::from_utf8(bytes) {
        Ok(text) => (text.to_owned(), None),
        // Not UTF-8 and no mark: a legacy code page, guessed from the byte statistics the way
        // browsers do (Windows-1252 for Western text, Windows-1251 or KOI8-R for Cyrillic, …).
        Err(_) => {
            let mut detector = chardetng::EncodingDetector::new();
            detector.feed(bytes, true);
            let encoding = match detector.guess(None, true) {
                e if e == UTF_8 => WINDOWS_1252,
                e => e,
            };
            let (text, _) = encoding.decode_without_bom_handling(bytes);
            (text.into_owned(), Some(encoding_name(encoding)))
        }
    }
}

fn encoding_name(encoding: &'static Encoding) -> &'static str {
    if encoding == UTF_16LE {
        "UTF-16LE"
    } else if encoding == UTF_16BE {
        "UTF-16BE"
    } else {
        encoding.name()
    }
}

/// A GIF cut to its first frame, without decoding: the header, the colour table, the blocks
/// before the first image, that image, and the trailer. `None` when the block structure is
/// broken.
pub(crate) fn gif_first_frame(bytes: &[u8]) -> Option<(Vec<u8>, usize)> {
    let mut at = 13; // signature (6) + logical screen descriptor (7)
    let flags = *bytes.get(10)?;
    if flags & 0x80 != 0 {
        at += 3 << ((flags & 0x07) + 1);
    }
    let mut frames = 0;
    let mut first_end = None;
    loop {
        match *bytes.get(at)? {
            0x21 => at = skip_sub_blocks(bytes, at + 2)?,
            0x2c => {
                let local = *bytes.get(at + 9)?;
                let mut next = at + 10;
                if local & 0x80 != 0 {
                    next += 3 << ((local & 0x07) + 1);
                }
                at = skip_sub_blocks(bytes, next + 1)?; // +1: the LZW minimum code size
                frames += 1;
                if first_end.is_none() {
                    first_end = Some(at);
                }
            }
            0x3b => break,
            _ => return None,
        }
    }
    let end = first_end?;
    let mut out = bytes.get(..end)?.to_vec();
    out.push(0x3b);
    Some((out, frames))
}

/// The offset after a chain of data sub-blocks starting at `at` (ended by a zero length).
fn skip_sub_blocks(bytes: &[u8], mut at: usize) -> Option<usize> {
    loop {
        let len = usize::from(*bytes.get(at)?);
        at += 1;
        if len == 0 {
            return Some(at);
        }
        at += len;
    }
}

/// A size for people: `12.3 KB`.
pub fn human_size(bytes: u64) -> String {
    #[expect(clippy::cast_precision_loss, reason = "a rounded size for display")]
    let b = bytes as f64;
    match bytes {
        0..1024 => format!("{bytes} bytes"),
        1024..1_048_576 => format!("{:.1} KB", b / 1024.0),
        1_048_576..1_073_741_824 => format!("{:.1} MB", b / 1_048_576.0),
        _ => format!("{:.1} GB", b / 1_073_741_824.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_are_told_by_content() {
        assert_eq!(
            sniff(b"\x89PNG\r\n\x1a\nrest"),
            Kind::Image {
                media_type: "image/png"
            }
        );
        assert_eq!(
            sniff(b"RIFF\0\0\0\0WEBPVP8 "),
            Kind::Image {
                media_type: "image/webp"
            }
        );
        assert_eq!(
            sniff(b"%PDF-1.7\n"),
            Kind::Binary {
                what: "PDF document"
            }
        );
        assert_eq!(sniff(b"\xff\xfeh\0i\0"), Kind::Text);
        assert_eq!(sniff(b"BMW is a car\n"), Kind::Text);
        assert_eq!(
            sniff(b"a\0b"),
            Kind::Binary {
                what: "binary data"
            }
        );
    }

    #[test]
    fn text_is_converted_to_utf8() {
        assert_eq!(
            decode_text(b"\xff\xfeh\0\xe9\0"),
            ("hé".to_owned(), Some("UTF-16LE"))
        );
        assert_eq!(
            decode_text(b"\xfe\xff\0h\0i"),
            ("hi".to_owned(), Some("UTF-16BE"))
        );
        assert_eq!(decode_text(b"\xef\xbb\xbfok"), ("ok".to_owned(), None));
        assert_eq!(
            decode_text(b"caf\xe9"),
            ("café".to_owned(), Some("windows-1252"))
        );
        // "Привет, мир! Доброе утро." in Windows-1251.
        let cp1251 =
            b"\xcf\xf0\xe8\xe2\xe5\xf2, \xec\xe8\xf0! \xc4\xee\xe1\xf0\xee\xe5 \xf3\xf2\xf0\xee.";
        assert_eq!(
            decode_text(cp1251),
            ("Привет, мир! Доброе утро.".to_owned(), Some("windows-1251"))
        );
    }
}
